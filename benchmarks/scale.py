"""Aggregating report files at scale: a designed table's reports in Parquet files, aggregated by the local engine
and by the Dask engine on a 2-worker LocalCluster, beside the limit: a raw ``np.bincount`` of the same codes read
from the same files. Each measurement runs in a fresh process, so its peak resident memory (ru_maxrss) is its own;
the table shows how far aggregating raised it above the process's peak after imports.

    python benchmarks/scale.py                      # 10^8 reports in 16 files, then benchmarks/oracles.py's table
    python benchmarks/scale.py --reports 10000000 --files 8
"""

import argparse
import multiprocessing
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import oracles  # benchmarks/oracles.py, next to this script
import pyarrow.parquet as pq

import lipdesign as ld
from lipdesign.engine import perturb_blocks
from lipdesign.reports import ReportWriter


def mechanism(k):
    prior = ld.Prior(np.arange(k, 0, -1) / (k * (k + 1) / 2))
    return ld.design(prior, ld.LIP(1.0), baselines=False)


def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def raw_bincount(paths, width, batch_rows):
    counts = np.zeros(width, dtype=np.int64)
    for path in paths:
        with pq.ParquetFile(path) as handle:
            for batch in handle.iter_batches(batch_size=batch_rows, use_threads=False):
                counts += np.bincount(batch.column(0).to_numpy(), minlength=width)
    return counts


def measure(task, document, paths, batch_rows, scheduler, queue):
    mech = ld.io.mechanism_from_dict(document)
    if task == "dask":  # warm the workers: imports and the rebuilt, re-verified mechanism (once per process)
        ld.aggregate(mech, [mech.perturb([0], rng=0)], engine=task, scheduler=scheduler)
    before, start = peak_mib(), time.perf_counter()
    if task == "raw":
        result = raw_bincount(paths, mech.table.shape[1], batch_rows)
    else:
        result = ld.aggregate(mech, paths, engine=task, scheduler=scheduler, batch_rows=batch_rows)["counts"]
    queue.put((time.perf_counter() - start, peak_mib() - before, result))


def run(task, document, paths, batch_rows, scheduler=None):
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=measure, args=(task, document, paths, batch_rows, scheduler, queue))
    process.start()
    result = queue.get()
    process.join()
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=10**8)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("-k", type=int, default=16, help="values of the designed table (default 16)")
    parser.add_argument("--batch-rows", type=int, default=1 << 20)
    parser.add_argument("--no-oracles", action="store_true",
                        help="skip the second part: OUE and OLH at k = 1024 beside pure-ldp (benchmarks/oracles.py)")
    args = parser.parse_args()

    mech = mechanism(args.k)
    document = mech.to_dict()
    with tempfile.TemporaryDirectory() as folder:
        start, paths, per_file = time.perf_counter(), [], -(-args.reports // args.files)
        per_file += -per_file % (1 << 16)  # each file starts on a simulation block
        values = mech.input_domain.sample(min(per_file, args.reports), np.random.default_rng(0))
        for index, first in enumerate(range(0, args.reports, per_file)):
            rows = min(per_file, args.reports - first)
            paths.append(str(Path(folder) / f"reports-{index:03d}.parquet"))
            with ReportWriter(paths[-1], mech) as writer:
                for offset in range(0, rows, 1 << 22):
                    chunk = values[offset:min(offset + (1 << 22), rows)]
                    writer.write(perturb_blocks(mech, chunk, 1, start=first + offset))
        size = sum(Path(path).stat().st_size for path in paths) / 2**20
        print(f"{args.reports:.3g} reports of a designed table (k = {args.k}, {mech.table.shape[1]} outputs) in "
              f"{len(paths)} Parquet files, {size:.0f} MiB on disk; perturbed and written in "
              f"{time.perf_counter() - start:.1f} s")

        from distributed import LocalCluster

        results = {"raw np.bincount": run("raw", document, paths, args.batch_rows),
                   "ld.aggregate local": run("local", document, paths, args.batch_rows)}
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
            results["ld.aggregate dask (2 warm workers)"] = run("dask", document, paths, args.batch_rows,
                                                          cluster.scheduler_address)
            with cluster.get_client() as client:
                workers = client.run(peak_mib)
        reference = results["raw np.bincount"][2]
        print(f"{'':36} {'seconds':>8} {'M reports/s':>12} {'x raw':>6} {'+peak MiB':>9} equal counts")
        for name, (seconds, peak, counts) in results.items():
            print(f"{name:36} {seconds:8.2f} {args.reports / seconds / 1e6:12.1f} "
                  f"{seconds / results['raw np.bincount'][0]:6.2f} {peak:9.0f} {np.array_equal(counts, reference)}")
        peaks = ", ".join(f"{value:.0f}" for value in workers.values())
        print(f"{reference.sum()} reports counted; dask workers' peak MiB: {peaks} "
              "(+peak: growth of the process's peak RSS over its peak before aggregating)")
    if not args.no_oracles:  # the second figure, measured in the same run
        print()
        oracles.main([])


if __name__ == "__main__":
    main()
