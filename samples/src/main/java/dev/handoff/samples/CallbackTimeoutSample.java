// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.Acquisition;

/**
 * Sample 4: a timeout withdraws a waiting callback with {@link Acquisition#cancel()}.
 *
 * <p>On the server of {@link CallbackSample}, "export" holds all 4 slots for 100 ms. Five "ping"
 * requests queue behind it and give up after 20 ms: the timer calls {@code cancel()}, which returns
 * {@code true} only while the request still waits; it then holds nothing and its waker never runs.
 * A "report" behind the pings, with no timeout, gets the slots when the export ends. It prints the
 * requests withdrawn, the handlers run without a grant (none: no waker ran for a withdrawn request),
 * those completed and the slots back.
 */
public final class CallbackTimeoutSample {

    static final long SLOTS = CallbackSample.SLOTS;
    static final int PINGS = 5;

    /** What the run measured. */
    public record Figures(int timedOut, int wokenWithoutGrant, int completed, long availableAfter) {}

    private CallbackTimeoutSample() {}

    /** Runs the export, the pings and the report, and returns the figures. */
    public static Figures run() throws InterruptedException {
        CallbackSample server = new CallbackSample(PINGS + 2); // the server and handler of sample 3
        int[] timedOut = {0}; // touched on the loop only
        try (EventLoop loop = server.loop) {
            loop.execute(() -> {
                server.submit(SLOTS, 100); // "export": every slot, for 100 ms
                for (int i = 0; i < PINGS; i++) {
                    Acquisition ping = server.submit(1, 5); // "ping": waits behind the export...
                    loop.schedule(
                            20,
                            () -> { // ...for 20 ms at most
                                if (ping.cancel()) { // still waiting: withdrawn, nothing held
                                    timedOut[0]++;
                                    server.settled.countDown();
                                } // else granted first: its handler runs
                            });
                }
                server.submit(2, 10); // "report": waits as long as it takes
            });
            server.settled.await();
        } // the loop has stopped: what it wrote is visible here
        return new Figures(timedOut[0], server.wokenWithoutGrant, server.completed, server.slots.availablePermits());
    }

    /** Runs the sample and prints its figures ({@code args} are ignored). */
    public static void main(String[] args) throws InterruptedException {
        Figures f = run();
        System.out.println("4. Callbacks: a timeout withdraws a waiting request with Acquisition.cancel()");
        System.out.printf(
                "   %d pings behind an export of all %d slots: %d withdrawn by their 20 ms timeout,%n",
                PINGS, SLOTS, f.timedOut());
        System.out.printf(
                "   handlers run without a grant: %d; completed: %d; slots back at the end: %d of %d%n",
                f.wokenWithoutGrant(), f.completed(), f.availableAfter(), SLOTS);
    }
}
