"""Other engines measured beside strataflow by ``strataflow bench --peer`` (PySpark, Dask)."""
