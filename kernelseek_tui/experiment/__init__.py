"""Experiments: sessions on one task that differ in one thing (questions on or off, the model,
the repertoire, a threshold, a budget), run side by side and compared.

``spec`` reads the experiment's TOML file, ``record`` keeps ``experiment.json`` (what is
planned, who runs it, whether it lives), ``runner`` runs the sessions, one per GPU, each as its
own ``kernelseek run`` process. An experiment's directory is a traces root of its own:
``<traces>/<experiment>/<session_id>/``.
"""
