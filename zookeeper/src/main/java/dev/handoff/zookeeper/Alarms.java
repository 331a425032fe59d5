// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/*
 * The alarms of one ZooKeeperSemaphore: a child of the path that the semaphore cannot order (see
 * QueueSnapshot's fail-closed rule), or data at the path that is not a capacity. Each distinct
 * alarm (its child and reason) is raised once: logged, counted, and passed to the listeners added
 * with addAlarmListener. Any thread may raise one; the set, the count and the listener list are
 * safe for concurrent use.
 */
final class Alarms {

    private final String path;
    private final List<Consumer<? super String>> listeners = new CopyOnWriteArrayList<>();
    private final Set<String> raised = ConcurrentHashMap.newKeySet();
    private final AtomicLong count = new AtomicLong();

    Alarms(String path) {
        this.path = path;
    }

    void add(Consumer<? super String> listener) {
        listeners.add(listener);
    }

    long count() {
        return count.get();
    }

    /** Raises the alarm, unless this child raised it for this reason already. */
    void raise(String child, String reason) {
        if (!raised.add(child + " " + reason)) {
            return;
        }
        count.incrementAndGet();
        String message = "ZooKeeperSemaphore " + path + ": granting stopped by " + child + ": " + reason;
        ZooKeeperSemaphore.LOG.log(System.Logger.Level.WARNING, message);
        for (Consumer<? super String> l : listeners) {
            try {
                l.accept(message);
            } catch (RuntimeException e) {
                ZooKeeperSemaphore.LOG.log(System.Logger.Level.WARNING, "alarm listener failed", e);
            }
        }
    }
}
