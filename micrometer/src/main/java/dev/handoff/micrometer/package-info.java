// SPDX-License-Identifier: Apache-2.0
/**
 * Micrometer metrics for the handoff {@link dev.handoff.Semaphore}:
 * {@link dev.handoff.micrometer.SemaphoreMetrics} is both the semaphore's
 * {@link dev.handoff.WaitListener} and a Micrometer {@code MeterBinder}, with gauges for the
 * capacity, the available permits, the queued waiters and the queued permits, a wait timer tagged
 * by outcome and a counter of rejected acquisitions. micrometer-core is an optional dependency of
 * this module: add it yourself.
 */
package dev.handoff.micrometer;
