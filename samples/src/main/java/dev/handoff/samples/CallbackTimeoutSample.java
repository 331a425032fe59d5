// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.Acquisition;
import dev.handoff.Semaphore;
import java.util.concurrent.CountDownLatch;

/**
 * Sample 4: a timeout withdraws a waiting callback with {@link Acquisition#cancel()}.
 *
 * <p>On the event loop of {@link CallbackSample}, "export" holds all 4 slots for 100 ms. Five "ping"
 * requests queue behind it and give up after 20 ms: the timer calls {@code cancel()}, which returns
 * {@code true} only while the request still waits; it then holds nothing and its waker never runs.
 * A "report" behind the pings, with no timeout, gets the slots when the export ends. It prints the
 * requests withdrawn, the wakers run after a withdrawal (none), those completed and the slots back.
 */
public final class CallbackTimeoutSample {

    static final long SLOTS = 4;
    static final int PINGS = 5;

    /** What the run measured. */
    public record Figures(int timedOut, int wakesAfterCancel, int completed, long availableAfter) {
    }

    // The server: touched on the loop thread only, so it needs no synchronization.
    private final EventLoop loop = new EventLoop();
    private final Semaphore slots = new Semaphore(SLOTS);
    private final CountDownLatch settled = new CountDownLatch(PINGS + 2);
    private int timedOut;
    private int wakesAfterCancel;
    private int completed;

    private CallbackTimeoutSample() {
    }

    /** Runs the export, the pings and the report, and returns the figures. */
    public static Figures run() throws InterruptedException {
        CallbackTimeoutSample server = new CallbackTimeoutSample();
        try (EventLoop loop = server.loop) {
            loop.execute(() -> {
                server.submit(SLOTS, 100, 0);                        // "export": every slot
                for (int i = 0; i < PINGS; i++) {
                    server.submit(1, 5, 20);                         // "ping": gives up after 20 ms
                }
                server.submit(2, 10, 0);                             // "report": waits as long as it takes
            });
            server.settled.await();
        } // the loop has stopped: what it wrote is visible here
        return new Figures(server.timedOut, server.wakesAfterCancel, server.completed, server.slots.availablePermits());
    }

    private void submit(long n, long workMillis, long timeoutMillis) {
        Acquisition[] call = new Acquisition[1];                    // stored before any task below can run
        boolean[] withdrawn = {false};
        call[0] = slots.acquireThen(n, () -> loop.execute(() -> {
            wakesAfterCancel += withdrawn[0] ? 1 : 0;                // never: a withdrawn wait is not woken
            loop.schedule(workMillis, () -> {                        // granted (never closed here): use, give back
                slots.release(n);
                completed++;
                settled.countDown();
            });
        }));
        if (timeoutMillis > 0) {
            loop.schedule(timeoutMillis, () -> {
                if (call[0].cancel()) {                              // still waiting: withdrawn, nothing held
                    withdrawn[0] = true;
                    timedOut++;
                    settled.countDown();
                }                                                    // else granted first: a no-op
            });
        }
    }

    /** Runs the sample and prints its figures ({@code args} are ignored). */
    public static void main(String[] args) throws InterruptedException {
        Figures f = run();
        System.out.println("4. Callbacks: a timeout withdraws a waiting request with Acquisition.cancel()");
        System.out.printf("   %d pings behind an export of all %d slots: %d withdrawn by their 20 ms timeout,%n",
                PINGS, SLOTS, f.timedOut());
        System.out.printf("   wakers run after a withdrawal: %d; completed: %d; slots back at the end: %d of %d%n",
                f.wakesAfterCancel(), f.completed(), f.availableAfter(), SLOTS);
    }
}
