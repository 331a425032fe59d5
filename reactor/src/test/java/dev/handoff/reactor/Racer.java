// SPDX-License-Identifier: Apache-2.0
package dev.handoff.reactor;

/**
 * Runs two actions at nearly the same moment, round after round, on the calling thread and one
 * long-lived partner thread: cheaper per round than a thread or a barrier per round, so a test can
 * afford 10^5 rounds. Both sides spin briefly, then yield, so it also behaves on a busy 2-core box.
 */
final class Racer implements AutoCloseable {

    private final Thread partner;

    /** The partner's action for the round in {@link #started}; written before {@code started}. */
    private volatile Runnable partnerAction;
    /** The round the partner should run; written by the caller. */
    private volatile long started;
    /** The last round the partner finished; written by the partner. */
    private volatile long finished;

    private volatile Throwable partnerFailure;
    private volatile boolean closed;

    Racer() {
        partner = new Thread(this::partnerLoop, "racer-partner");
        partner.setDaemon(true);
        partner.start();
    }

    private void partnerLoop() {
        long done = 0;
        while (true) {
            int spins = 0;
            while (started == done) {
                if (closed) {
                    return;
                }
                backOff(++spins);
            }
            long round = started;
            try {
                partnerAction.run();
            } catch (Throwable t) {
                partnerFailure = t;
            }
            done = round;
            finished = round;
        }
    }

    /** Runs {@code mine} here and {@code theirs} on the partner, together; returns when both ended. */
    void race(Runnable mine, Runnable theirs) {
        long round = started + 1;
        partnerAction = theirs;
        started = round;
        mine.run();
        int spins = 0;
        while (finished != round) {
            backOff(++spins);
        }
        Throwable t = partnerFailure;
        if (t != null) {
            partnerFailure = null;
            throw new AssertionError("the partner's action failed", t);
        }
    }

    private static void backOff(int spins) {
        if (spins < 200) {
            Thread.onSpinWait();
        } else {
            Thread.yield();
        }
    }

    @Override
    public void close() throws InterruptedException {
        closed = true;
        partner.join(10_000);
    }
}
