"""The conformance suite of ``strataflow.pyspark.sql`` against real PySpark.

``values.py`` holds the typed value table every case reads, ``cases.py`` the cases (one
function or cast applied to columns of that table, in the DataFrame form and the
``spark.sql`` form), ``record.py`` runs them on real PySpark and writes the goldens
(``goldens/*.json``), and ``verdict.py`` runs them on strataflow and says, case by case,
same / refused / differs. ``tests/test_conformance.py`` asserts that nothing differs.
"""
