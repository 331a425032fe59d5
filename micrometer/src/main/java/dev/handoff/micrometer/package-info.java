// SPDX-License-Identifier: Apache-2.0
/**
 * Micrometer metrics for the handoff {@link dev.handoff.Semaphore}, {@link dev.handoff.Mutex} and
 * {@link dev.handoff.RwLock}: {@link dev.handoff.micrometer.SemaphoreMetrics} is both the
 * primitive's {@link dev.handoff.WaitListener} and a Micrometer {@code MeterBinder}, with gauges
 * that read the primitive (a semaphore's capacity, available permits, queued waiters and queued
 * permits; whether a mutex is locked; a read-write lock's write flag and readers), a wait timer
 * tagged by outcome and a counter of rejected acquisitions, all tagged with the primitive's name.
 * {@link dev.handoff.micrometer.ZooKeeperSemaphoreMetrics} does the same for the cluster-wide
 * {@code ZooKeeperSemaphore} of handoff-zookeeper, as its {@code ZooKeeperListener}, and
 * {@link dev.handoff.micrometer.AdaptiveCapacityMetrics} for the adaptive capacity of
 * handoff-adaptive, as its {@code CapacityListener}. micrometer-core is an optional dependency of
 * this module, and so are handoff-zookeeper and handoff-adaptive: add the ones you use yourself.
 */
@NullMarked
package dev.handoff.micrometer;

import org.jspecify.annotations.NullMarked;
