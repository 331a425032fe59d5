#!/usr/bin/env bash
# Builds the benchmarks module and runs the whole suite: JMH, handoff against java.util.concurrent,
# kotlinx.coroutines and a Go-style monitor, in one run. About 15 minutes on 2 cores, up to an hour
# when measurements taken while the cores were far apart are measured again (see below). Prints the
# table of ratios (ours / peer, with error bars) and writes docs/benchmarks/{results.md,
# results.tsv, jmh-results.json, benchmarks.png}.
#
# Load guard: the report measures the CPU used by other processes during every measured JMH
# iteration (/proc/stat busy time minus this run's own JVMs). If it exceeds 0.25 CPU in any of
# them, the full run is rejected: docs/benchmarks/ is left alone, the results go to
# benchmarks/target/rejected-run/ (--rejected-out DIR), the console says which benchmark saw how
# much load and from which processes, and the exit status is 3. A quiet run's results.md states
# the maximum load measured. A run is rejected the same way when a measurement outside the
# blocking workloads is unsteady (slowest measured iteration > 1.5x its fastest: the host slowed
# part of the run, which /proc cannot show), or when a workload whose threads hand permits to each other
# was measured while the cores were far apart (a cache line's round trip between two threads, probed
# after every iteration by CrossCoreProbe, above 200 ns; close cores take 50-100). A far-cored or
# unsteady measurement is first measured again, up to 3 times (--retries N), each time once the
# cores have been close for three probes in a row, 5 s apart (waiting at most --close-wait 600 s);
# the run is rejected if one still is after that. Nothing is measured again once other processes
# have loaded a measured iteration: that run is rejected anyway.
# --smoke is never rejected (it writes to benchmarks/target/smoke).
#
#   ./bench.sh                 full run
#   ./bench.sh --smoke         every benchmark once, tiny iterations, seconds (CI runs the same
#                              thing as a JUnit test in `mvn verify`)
#   ./bench.sh --help          the report's other options (--include, --forks, --waiters, --out)
#   ./bench.sh jmh -prof stack BlockingContendedBenchmark     plain JMH on the same jar
#   ./bench.sh jmh -prof dev.handoff.benchmarks.ManyThreadsProfiler ManyThreadsBenchmark.platform64
#                              the lock storm (workload 8) alone, with its CPU-time and latency figures;
#                              its virtual-thread shape needs a JDK 21+: add -jvm /path/to/jdk21+/bin/java
#                              on JDK 17 (the report does that by itself with a JDK 21+ found beside the
#                              running one, or --virtual-jvm PATH; it says so, or that it skipped it)
#   ./bench.sh interleave      the coroutine workload for kotlinx, handoff and the not-cancellable
#                              diagnostic in alternating blocks in one JVM (medians of per-block
#                              ratios: a cross-check of JMH's ratio that host slowdowns cannot skew)
#   ./bench.sh fairshare       the fair share on its own, about 1.5 minutes: a polite tenant's wait
#                              (p50, p99) while a noisy tenant floods, against the FIFO Semaphore and
#                              a per-tenant-capped java.util.concurrent design (FairShareFloodBenchmark),
#                              and the cost per acquisition and per waiter against the Semaphore
#                              (FairShareBenchmark); writes docs/benchmarks/{fair-share.md,
#                              fair-share-jmh.json}. Measured again and rejected like the full run: a
#                              far-cored flood or an unsteady cost measurement is measured again, up
#                              to 3 times (--retries N), each time once the cores have been close
#                              (--close-wait S), and fair-share.md says what and why; loaded, or still
#                              unsteady or far-cored after that: exit status 3, written to
#                              benchmarks/target/rejected-run/
#   ./bench.sh fairshare --smoke   the same, every configuration once (writes benchmarks/target/smoke)
#   ./bench.sh edge            admission at the edge, about 2 minutes: a gRPC server (in-process)
#                              whose handler has a knee, an open-loop load from a polite tenant and a
#                              noisy one at 10x, in front of it no limit, a j.u.c. Semaphore, Netflix's
#                              limiters and handoff's AdmissionInterceptor (FIFO, keyed, keyed +
#                              adaptive); writes docs/benchmarks/{edge.md, edge.png}. Not rejected when
#                              loaded: the load of other processes during each contender's run is
#                              measured and edge.md states it (and says so plainly if it was loaded)
#   ./bench.sh edge --smoke    every contender for 1 s (writes benchmarks/target/smoke)
#
# By default java-core and kotlin-ext are built from this checkout too (-am). With
# BENCH_UPSTREAM=installed the ones installed in ~/.m2 are used instead (mvn install first).
set -euo pipefail
cd "$(dirname "$0")"

build=(mvn -B -q -ntp -Dkotlin.compiler.daemon=false -DskipTests -pl benchmarks)
if [ "${BENCH_UPSTREAM:-reactor}" != "installed" ]; then
  build+=(-am)
fi
"${build[@]}" package

args=("$@")
if [ "${1:-}" = "--smoke" ] || { { [ "${1:-}" = "fairshare" ] || [ "${1:-}" = "edge" ]; } && [ "${2:-}" = "--smoke" ]; }; then
  args+=(--out benchmarks/target/smoke)
fi
exec java -Djava.awt.headless=true -jar benchmarks/target/benchmarks.jar "${args[@]}"
