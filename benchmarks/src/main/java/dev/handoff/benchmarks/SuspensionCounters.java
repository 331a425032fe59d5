// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;

/**
 * JMH secondary results of the coroutine and future workloads: how many acquisitions ran, and how
 * many of them suspended (for a future: was not yet complete when {@code acquireAsync} returned).
 * A contended benchmark where nothing waits measures only the fast path, so the report prints the
 * share. JMH zeroes the fields before each iteration.
 */
@State(Scope.Thread)
@AuxCounters(AuxCounters.Type.EVENTS)
public class SuspensionCounters {
    /** Acquisitions run in this iteration. */
    public long acquisitions;

    /** Acquisitions that suspended (or whose future was not yet complete) in this iteration. */
    public long suspended;
}
