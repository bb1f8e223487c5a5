# Sourced by scripts/demo and scripts/test (from the repository root): install into .venv only
# when it is missing or pyproject.toml changed since the last install, so that every start after
# the first works offline. The stamp .venv/.kernelseek-install holds the hash of pyproject.toml
# and what was installed; a failed install writes none, so the next start tries again.
#
#   ensure_installed SPEC [SPEC_THAT_ALSO_DOES...]    e.g.  ensure_installed . '.[dev]'

_pyproject_hash() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum pyproject.toml | cut -c1-64
  else
    shasum -a 256 pyproject.toml | cut -c1-64
  fi
}

ensure_installed() {
  local want=$1 stamp=.venv/.kernelseek-install hash spec
  hash=$(_pyproject_hash)
  if [ -x .venv/bin/python ] && [ -f "$stamp" ]; then
    for spec in "$@"; do
      if [ "$(cat "$stamp")" = "$hash $spec" ]; then
        return 0
      fi
    done
  fi
  if [ ! -x .venv/bin/python ]; then
    "${PYTHON:-python3}" -m venv .venv
  fi
  rm -f "$stamp"
  echo "installing into .venv (pyproject.toml is new or changed; needs the network once)" >&2
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e "$want"
  echo "$hash $want" > "$stamp"
}
