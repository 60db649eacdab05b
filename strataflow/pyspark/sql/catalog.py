"""``spark.catalog``: the session's temporary views and the application's global ones.

strataflow has no metastore (no Hive tables, no databases to create), so the catalog is
what Spark's is without one: temporary views live in their session, global temporary
views (``df.createGlobalTempView``) in the SparkContext, where every session of the
application reads them as ``global_temp.name`` (in ``spark.table`` and ``spark.sql``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from strataflow.pyspark.errors import AnalysisException

__all__ = ["Catalog", "Table", "Database", "GLOBAL_TEMP"]

#: the database name global temporary views are read under, as Spark's default
GLOBAL_TEMP = "global_temp"


class Table(NamedTuple):
    """One row of ``Catalog.listTables`` (PySpark's ``Table``)."""

    name: str
    catalog: str | None
    namespace: list[str] | None
    description: str | None
    tableType: str
    isTemporary: bool


class Database(NamedTuple):
    """One row of ``Catalog.listDatabases``."""

    name: str
    catalog: str | None
    description: str | None
    locationUri: str


def global_views(sc: Any) -> dict:
    """The application's global temporary views: lower-case name -> DataFrame, kept on
    the SparkContext so that every session on it shares them and they end with it."""
    views = getattr(sc, "_global_temp_views", None)
    if views is None:
        views = {}
        sc._global_temp_views = views
    return views


def split_global(name: str) -> str | None:
    """``"global_temp.x"`` -> ``"x"``; any other name -> None."""
    db, dot, rest = name.partition(".")
    return rest.strip("`").lower() if dot and db.strip("`").lower() == GLOBAL_TEMP else None


def register(session: Any, name: str, df: Any, replace: bool, global_: bool = False) -> None:
    """Names ``df`` as a temporary view (``global_``: an application-wide one)."""
    views = global_views(session.sparkContext) if global_ else session._views
    if name.lower() in views and not replace:
        shown = f"{GLOBAL_TEMP}.{name}" if global_ else name
        raise AnalysisException(f"[TEMP_TABLE_OR_VIEW_ALREADY_EXISTS] Cannot create the temporary view `{shown}` "
                                f"because it already exists.", "TEMP_TABLE_OR_VIEW_ALREADY_EXISTS")
    views[name.lower()] = df


class Catalog:
    """The session's views, as PySpark's ``spark.catalog`` lists and drops them.

    >>> spark.range(3).createOrReplaceTempView("three")
    >>> [t.name for t in spark.catalog.listTables() if t.name == "three"]
    ['three']
    >>> spark.catalog.dropTempView("three")
    True
    """

    def __init__(self, session: Any) -> None:
        self._session = session

    def currentDatabase(self) -> str:
        """``'default'``: strataflow has one database, for temporary views.

        >>> spark.catalog.currentDatabase()
        'default'
        """
        return "default"

    def currentCatalog(self) -> str:
        """``'spark_catalog'``, as Spark's session catalog.

        >>> spark.catalog.currentCatalog()
        'spark_catalog'
        """
        return "spark_catalog"

    def listDatabases(self, pattern: str | None = None) -> list[Database]:
        """The one database, ``default``.

        >>> [d.name for d in spark.catalog.listDatabases()]
        ['default']
        """
        return [Database("default", "spark_catalog", "default database", "")]

    def listTables(self, dbName: str | None = None, pattern: str | None = None) -> list[Table]:
        """The temporary views (``dbName="global_temp"``: the global ones), sorted by name.

        >>> spark.range(1).createOrReplaceGlobalTempView("g1")
        >>> [t.name for t in spark.catalog.listTables("global_temp")]
        ['g1']
        >>> spark.catalog.dropGlobalTempView("g1")
        True
        """
        import fnmatch

        if dbName is not None and dbName.lower() == GLOBAL_TEMP:
            names, ns = global_views(self._session.sparkContext), [GLOBAL_TEMP]
        else:
            names, ns = self._session._views, []
        keep = sorted(n for n in names if pattern is None or fnmatch.fnmatch(n, pattern.replace("%", "*")))
        return [Table(n, None, ns, None, "TEMPORARY", True) for n in keep]

    def tableExists(self, tableName: str, dbName: str | None = None) -> bool:
        """Whether a view of that name exists.

        >>> spark.catalog.tableExists("no_such_view")
        False
        """
        name = f"{dbName}.{tableName}" if dbName else tableName
        try:
            self._session.table(name)
        except AnalysisException:
            return False
        return True

    def dropTempView(self, viewName: str) -> bool:
        """Forgets a temporary view; True if there was one.

        >>> spark.catalog.dropTempView("never_made")
        False
        """
        return self._session._views.pop(viewName.lower(), None) is not None

    def dropGlobalTempView(self, viewName: str) -> bool:
        """Forgets a global temporary view; True if there was one.

        >>> spark.catalog.dropGlobalTempView("never_made")
        False
        """
        return global_views(self._session.sparkContext).pop(viewName.lower(), None) is not None

    def isCached(self, tableName: str) -> bool:
        """Whether the view's DataFrame is cached.

        >>> spark.range(2).cache().createOrReplaceTempView("c2"); spark.catalog.isCached("c2")
        True
        """
        return bool(self._session.table(tableName).is_cached)

    def cacheTable(self, tableName: str, storageLevel: Any = None) -> None:
        """Caches the view's DataFrame (``storageLevel``: as ``DataFrame.persist``).

        >>> spark.range(2).createOrReplaceTempView("c3"); spark.catalog.cacheTable("c3")
        >>> spark.catalog.isCached("c3")
        True
        """
        self._session.table(tableName).persist(storageLevel)

    def uncacheTable(self, tableName: str) -> None:
        """Drops the view's DataFrame from the cache.

        >>> spark.range(2).cache().createOrReplaceTempView("c4"); spark.catalog.uncacheTable("c4")
        >>> spark.catalog.isCached("c4")
        False
        """
        self._session.table(tableName).unpersist()

    def clearCache(self) -> None:
        """Drops every view's DataFrame from the cache.

        >>> spark.range(2).cache().createOrReplaceTempView("c5"); spark.catalog.clearCache()
        >>> spark.catalog.isCached("c5")
        False
        """
        for df in list(self._session._views.values()) + list(global_views(self._session.sparkContext).values()):
            df.unpersist()
