// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

/** A call run on a thread of its own that the test sees waiting on an object before it answers. */
final class WaitingCall {
    private WaitingCall() {}

    /**
     * Runs {@code call} on a daemon thread and returns its outcome (its value, or what it threw)
     * once that thread waits in a timed park on {@code blocker}; fails the test if the call
     * answers first, or never waits within 30 s.
     */
    static CompletableFuture<Object> start(Object blocker, Supplier<?> call) throws InterruptedException {
        CompletableFuture<Object> outcome = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                outcome.complete(call.get());
            } catch (Throwable e) {
                outcome.complete(e);
            }
        });
        t.setDaemon(true);
        t.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!(t.getState() == Thread.State.TIMED_WAITING && LockSupport.getBlocker(t) == blocker)) {
            assertFalse(outcome.isDone(), "answered before it waited: " + outcome.getNow(null));
            assertTrue(System.nanoTime() < deadline, "never waited: " + t.getState());
            Thread.sleep(1);
        }
        return outcome;
    }

    /** {@link #start(Object, Supplier)} of a call with no value: its outcome is null or what it threw. */
    static CompletableFuture<Object> start(Object blocker, Runnable call) throws InterruptedException {
        return start(blocker, () -> {
            call.run();
            return null;
        });
    }
}
