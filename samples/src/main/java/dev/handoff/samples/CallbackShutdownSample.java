// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.Acquisition;
import dev.handoff.Semaphore;

/**
 * Sample 5: shutting down with {@link Semaphore#close()}: waiting callbacks are woken without a grant.
 *
 * <p>The server of {@link CallbackSample}, shut down while "flush" holds all 4 slots and "late" waits
 * behind it. The close wakes "late" at once; its handler finds {@link Acquisition#isGranted()} false:
 * it holds nothing and gives back nothing. "after-shutdown" arrives next and is refused the same
 * way, its waker run inside {@code acquireThen}. "flush" still completes and gives its slots back,
 * since {@code release} keeps working after a close. It prints the requests completed and refused,
 * and the slots back.
 */
public final class CallbackShutdownSample {

    static final long SLOTS = CallbackSample.SLOTS;

    /** What the run measured. */
    public record Figures(int completed, int refusedByClose, int stepsOffLoop, long availableAfter, boolean closed) {}

    private CallbackShutdownSample() {}

    /** Runs the three requests around the shutdown and returns the figures. */
    public static Figures run() throws InterruptedException {
        CallbackSample server = new CallbackSample(3); // the server and handler of sample 3
        try (EventLoop loop = server.loop) {
            loop.execute(() -> {
                server.submit(SLOTS, 20); // "flush": granted at once
                server.submit(1, 5); // "late": waits behind it
                server.slots.close(); // the shutdown: "late" is woken, not granted
                server.submit(1, 5); // "after-shutdown": refused at once
            });
            server.settled.await();
        } // the loop has stopped: what it wrote is visible here
        return new Figures(
                server.completed,
                server.wokenWithoutGrant,
                server.loop.stepsOffLoop(),
                server.slots.availablePermits(),
                server.slots.isClosed());
    }

    /** Runs the sample and prints its figures ({@code args} are ignored). */
    public static void main(String[] args) throws InterruptedException {
        Figures f = run();
        System.out.println("5. Callbacks: close() at shutdown wakes the waiting requests without a grant");
        System.out.printf(
                "   closed: %b; completed: %d (\"flush\"); refused by the close: %d (\"late\", \"after-shutdown\")%n",
                f.closed(), f.completed(), f.refusedByClose());
        System.out.printf(
                "   handler steps off the loop: %d; slots back at the end: %d of %d%n",
                f.stepsOffLoop(), f.availableAfter(), SLOTS);
    }
}
