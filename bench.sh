#!/usr/bin/env bash
# Builds the benchmarks module and runs the whole suite: JMH, handoff against java.util.concurrent,
# kotlinx.coroutines and a Go-style monitor, in one run. About 7-10 minutes on 2 cores. Prints the
# table of ratios (ours / peer, with error bars) and writes docs/benchmarks/{results.md,
# jmh-results.json, benchmarks.png}.
#
#   ./bench.sh                 full run
#   ./bench.sh --smoke         every benchmark once, tiny iterations, seconds (CI runs the same
#                              thing as a JUnit test in `mvn verify`)
#   ./bench.sh --help          the report's other options (--include, --forks, --waiters, --out)
#   ./bench.sh jmh -prof stack BlockingContendedBenchmark     plain JMH on the same jar
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
if [ "${1:-}" = "--smoke" ]; then
  args+=(--out benchmarks/target/smoke)
fi
exec java -Djava.awt.headless=true -jar benchmarks/target/benchmarks.jar "${args[@]}"
