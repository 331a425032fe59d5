// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.Acquisition;
import dev.handoff.Semaphore;
import java.util.concurrent.CountDownLatch;

/**
 * Sample 5: shutting down with {@link Semaphore#close()}: waiting callbacks are woken without a grant.
 *
 * <p>On the event loop of {@link CallbackSample}, "flush" holds all 4 slots and "late" waits behind
 * it when the server shuts down and closes the semaphore. The close wakes "late" at once; its
 * handler finds {@link Acquisition#isGranted()} false: it holds nothing and gives back nothing.
 * "after-shutdown" arrives next and is refused the same way, its waker run inside
 * {@code acquireThen}. "flush" still completes and gives its slots back, since {@code release}
 * keeps working after a close. It prints the requests completed and refused, and the slots back.
 */
public final class CallbackShutdownSample {

    static final long SLOTS = 4;

    /** What the run measured. */
    public record Figures(int completed, int refusedByClose, int stepsOffLoop, long availableAfter, boolean closed) {
    }

    // The server: touched on the loop thread only, so it needs no synchronization.
    private final EventLoop loop = new EventLoop();
    private final Semaphore slots = new Semaphore(SLOTS);
    private final CountDownLatch settled = new CountDownLatch(3);
    private int completed;
    private int refusedByClose;

    private CallbackShutdownSample() {
    }

    /** Runs the three requests around the shutdown and returns the figures. */
    public static Figures run() throws InterruptedException {
        CallbackShutdownSample server = new CallbackShutdownSample();
        try (EventLoop loop = server.loop) {
            loop.execute(() -> {
                server.submit(SLOTS, 20);                            // "flush": granted at once
                server.submit(1, 5);                                 // "late": waits behind it
                server.slots.close();                                // the shutdown: "late" is woken, not granted
                server.submit(1, 5);                                 // "after-shutdown": refused at once
            });
            server.settled.await();
        } // the loop has stopped: what it wrote is visible here
        return new Figures(server.completed, server.refusedByClose, server.loop.stepsOffLoop(),
                server.slots.availablePermits(), server.slots.isClosed());
    }

    private void submit(long n, long workMillis) {
        Acquisition[] call = new Acquisition[1];                    // stored before the posted handler runs
        call[0] = slots.acquireThen(n, () -> loop.execute(() -> handle(call[0], n, workMillis)));
    }

    private void handle(Acquisition acquisition, long n, long workMillis) {
        loop.checkOnLoop();
        if (!acquisition.isGranted()) {                              // closed: nothing held, nothing to give back
            refusedByClose++;
            settled.countDown();
            return;
        }
        loop.schedule(workMillis, () -> {
            slots.release(n);                                        // works after close too
            completed++;
            settled.countDown();
        });
    }

    /** Runs the sample and prints its figures ({@code args} are ignored). */
    public static void main(String[] args) throws InterruptedException {
        Figures f = run();
        System.out.println("5. Callbacks: close() at shutdown wakes the waiting requests without a grant");
        System.out.printf("   closed: %b; completed: %d (\"flush\"); refused by the close: %d (\"late\", \"after-shutdown\")%n",
                f.closed(), f.completed(), f.refusedByClose());
        System.out.printf("   handler steps off the loop: %d; slots back at the end: %d of %d%n",
                f.stepsOffLoop(), f.availableAfter(), SLOTS);
    }
}
