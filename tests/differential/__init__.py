"""The differential tester (issue 50, point 3): random Dataset programs, run on every local
backend (and PySpark where installed), compared with a plain-Python model of the same
program.

Why here, under ``tests/`` and not in the package: it is test code (hypothesis, the fault
helpers of ``tests/faults_util.py``), never shipped in the wheel; the suite imports it as
``differential`` (pytest puts ``tests/`` on ``sys.path``), ``benchmarks/differential.py``
adds ``tests/`` to its path, and executor processes import ``differential.fns`` by the
same name because they inherit the driver's ``sys.path``.

One job a module:

- ``fns.py``: the user classes keys are made of, every function a program passes to the
  API (by name, picklable), and ``canon``, the comparisons' equality and order;
- ``domains.py``: the spaces of values (hypothesis strategies, one per key type);
- ``programs.py``: what a program is, how hypothesis draws one, how it prints as Python;
- ``model.py``: the reference interpreter (lists, dicts, ``sorted``) and what each action
  should answer;
- ``engine.py``: a program built and run on strataflow (or PySpark, by its names);
- ``compare.py``: an answer against the model's expectation;
- ``faults.py``: damaged block and shuffle files between runs;
- ``harness.py``: a shared Context per engine, a program's phases, its failures.
"""
