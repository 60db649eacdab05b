"""K-means MEMORY_ONLY on executor processes against the same kernel in forked numpy
processes, paired (issue 13's ratio with the noise of a shared 2-core machine taken out).

    python benchmarks/kmeans_paired.py        # ROUNDS=8 by default

Both sides stay up the whole run (the engine's Context with its points cached, and P forked
workers sharing the array copy-on-write); each round runs 6 iterations of one, then of
the other (the order swapped every round), and the ratio of their median iterations is
taken per round: drift in the machine hits both alike. Prints the median ratio and every
round's. Sizes as ``scaling.py``'s defaults: 2M x 20 points, 4 partitions per worker, P=2.
"""
import os, sys, time, tempfile, statistics as st
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]
import multiprocessing as mp
import scaling as S
from strataflow.storage.level import StorageLevel
n, dims, P = 2_000_000, 20, int(os.environ.get("P", 2))
data = S.gen_points(0, n, n, dims, 0); init = data[:8].copy()
S._FORK["points"] = data
def w(conn, bounds):
    from threadpoolctl import threadpool_limits; threadpool_limits(1, "blas")
    d = S._FORK["points"]
    while (c := conn.recv()) is not None:
        conn.send(S.combine([S.kmeans_kernel(d[a:b], c) for a, b in bounds]))
bounds = S.slice_bounds(n, 4 * P); fk = mp.get_context("fork"); ws = []
for k in range(P):
    a, b = fk.Pipe(); p = fk.Process(target=w, args=(b, bounds[k*4:(k+1)*4]), daemon=True); p.start(); ws.append((p, a))
tmp = tempfile.mkdtemp(); dirs = {"cache": tmp + "/c", "shuffle": tmp + "/s"}; [os.makedirs(d) for d in dirs.values()]
ctx = S.make_context("processes", P, 3 * data.nbytes, dirs)
pts = ctx.from_numpy(data, 4 * P).persist(StorageLevel.MEMORY_ONLY); pts.count()
def eng(c): return S.combine(pts.map_partitions(lambda a, c=c: [S.kmeans_kernel(a, c)]).collect())
def frk(c):
    for _, conn in ws: conn.send(c)
    return S.combine([conn.recv() for _, conn in ws])
ratios = []
E, F = [], []
for rnd in range(int(os.environ.get("ROUNDS", 8))):
    res = {}
    for name, fn in ([("e", eng), ("f", frk)] if rnd % 2 == 0 else [("f", frk), ("e", eng)]):
        c = init; ts = []
        for i in range(6):
            t0 = time.perf_counter(); c = S.new_centres(c, fn(c)); ts.append(time.perf_counter() - t0)
        res[name] = st.median(ts[1:])
    E.append(res["e"]); F.append(res["f"]); ratios.append(res["e"] / res["f"])
print(f"engine {st.median(E)*1e3:.1f} ms forked {st.median(F)*1e3:.1f} ms ratio median {st.median(ratios):.3f} ratios {[round(r,3) for r in ratios]}")
for _, conn in ws: conn.send(None)
ctx.stop()
