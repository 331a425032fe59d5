// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Scaffolding of the callback samples: one event-loop thread, standing for Netty's or Vert.x's,
 * that runs posted and scheduled tasks one at a time, and counts the handler steps that ran on any
 * other thread (the samples show there are none). {@link #close()} waits for the loop to finish its
 * tasks; after it, everything the loop wrote is visible to the closing thread.
 */
final class EventLoop implements AutoCloseable {

    private final AtomicInteger stepsOffLoop = new AtomicInteger();
    private volatile Thread thread;
    private final ScheduledExecutorService executor =
            Executors.newSingleThreadScheduledExecutor(task -> thread = new Thread(task, "event-loop"));

    /** Posts {@code task} to the loop. */
    void execute(Runnable task) {
        executor.execute(task);
    }

    /** Runs {@code task} on the loop in {@code millis} ms; the result cancels it. */
    ScheduledFuture<?> schedule(long millis, Runnable task) {
        return executor.schedule(task, millis, TimeUnit.MILLISECONDS);
    }

    /** Called first by every handler step: counts the steps that do not run on the loop thread. */
    void checkOnLoop() {
        if (Thread.currentThread() != thread) {
            stepsOffLoop.incrementAndGet();
        }
    }

    /** The handler steps that ran off the loop thread so far. */
    int stepsOffLoop() {
        return stepsOffLoop.get();
    }

    /** Stops the loop once its tasks have run (cancelled timers are dropped) and waits for it. */
    @Override
    public void close() {
        executor.shutdown();
        try {
            if (!executor.awaitTermination(1, TimeUnit.MINUTES)) {
                throw new IllegalStateException("the event loop did not finish its tasks within a minute");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while the event loop finished its tasks", e);
        }
    }
}
