from kernelseek_tui.cli import main

raise SystemExit(main())
