// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.Acquisition;
import dev.handoff.Semaphore;
import dev.handoff.Waker;
import java.util.concurrent.CountDownLatch;
import java.util.stream.IntStream;

/**
 * Sample 3: callbacks ({@link Semaphore#acquireThen(long, Waker)}) on a single event-loop thread.
 *
 * <p>An event-loop server (think Netty or Vert.x) must never block its thread. The waker only posts
 * the request back to the loop, so its handler runs on the loop thread whether the slots were free
 * at once or came later from a release, and reads the outcome from the {@link Acquisition} first.
 * It prints the requests granted at once, the handler steps off the loop (none), the peak slots in
 * use (never above the capacity) and the slots back at the end.
 */
public final class CallbackSample {

    static final long SLOTS = 4;
    static final int REQUESTS = 24;

    /** What the run measured. */
    public record Figures(
            int completed, int grantedAtOnce, int stepsOffLoop, long peakSlotsInUse, long availableAfter) {}

    // The server (also of samples 4 and 5): touched on the loop thread only, so it needs no synchronization.
    final EventLoop loop = new EventLoop();
    final Semaphore slots = new Semaphore(SLOTS);
    final CountDownLatch settled;
    private long inUse;
    private long peakInUse;
    private int grantedAtOnce;
    int completed;
    int wokenWithoutGrant;

    CallbackSample(int requests) {
        settled = new CountDownLatch(requests);
    }

    /** Runs requests for 1 to 3 slots, each using them 1 to 5 ms, and returns the figures. */
    public static Figures run() throws InterruptedException {
        CallbackSample server = new CallbackSample(REQUESTS);
        try (EventLoop loop = server.loop) {
            loop.execute(() -> IntStream.range(0, REQUESTS).forEach(i -> server.submit(1 + i % 3, 1 + i % 5)));
            server.settled.await();
        } // the loop has stopped: what it wrote is visible here
        return new Figures(
                server.completed,
                server.grantedAtOnce,
                server.loop.stepsOffLoop(),
                server.peakInUse,
                server.slots.availablePermits());
    }

    Acquisition submit(long n, long workMillis) {
        // The waker (run in acquireThen, or by a later release) only posts to the loop: call[0] is set by then.
        Acquisition[] call = new Acquisition[1];
        call[0] = slots.acquireThen(n, () -> loop.execute(() -> handle(call[0], n, workMillis)));
        grantedAtOnce += call[0].isGranted() ? 1 : 0;
        return call[0];
    }

    private void handle(Acquisition acquisition, long n, long workMillis) {
        loop.checkOnLoop();
        if (!acquisition.isGranted()) { // closed (sample 5): nothing held, nothing to give back
            wokenWithoutGrant++;
            settled.countDown();
            return;
        }
        inUse += n;
        peakInUse = Math.max(peakInUse, inUse);
        loop.schedule(workMillis, () -> {
            loop.checkOnLoop();
            inUse -= n;
            slots.release(n); // may grant waiters: their wakers post to the loop
            completed++;
            settled.countDown();
        });
    }

    /** Runs the sample and prints its figures ({@code args} are ignored). */
    public static void main(String[] args) throws InterruptedException {
        Figures f = run();
        System.out.println("3. Callbacks: acquireThen(n, Waker) on a single event-loop thread");
        System.out.printf(
                "   %d requests for %d backend slots: %d granted at once, %d after waiting; %d completed%n",
                REQUESTS, SLOTS, f.grantedAtOnce(), REQUESTS - f.grantedAtOnce(), f.completed());
        System.out.printf(
                "   handler steps off the loop thread: %d; peak slots in use: %d of %d; back at the end: %d%n",
                f.stepsOffLoop(), f.peakSlotsInUse(), SLOTS, f.availableAfter());
    }
}
