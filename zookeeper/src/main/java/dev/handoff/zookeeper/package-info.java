// SPDX-License-Identifier: Apache-2.0
/**
 * A weighted, strictly FIFO, cluster-wide semaphore on Apache ZooKeeper, through Apache Curator:
 * {@link dev.handoff.zookeeper.ZooKeeperSemaphore}, its {@link dev.handoff.zookeeper.Lease}s (which
 * say when they can no longer be sure they hold, and carry a fencing token for the store they
 * protect), and a {@link dev.handoff.zookeeper.LocalFront} that lets the callers of one JVM share
 * one cluster request and hands it on when another client waits. Kotlin users also get {@code suspend fun ZooKeeperSemaphore.acquire} and
 * {@code withPermits} (file {@code ZooKeeperSemaphores.kt}).
 */
@NullMarked
package dev.handoff.zookeeper;

import org.jspecify.annotations.NullMarked;
