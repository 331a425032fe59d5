// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.Mutex;
import dev.handoff.Permits;
import dev.handoff.RwLock;
import java.util.ArrayList;
import java.util.List;

/**
 * Sample 18: a {@link Mutex} and an {@link RwLock} held through the {@link Permits} handle. Eight
 * threads deposit into one account under a named mutex, and check a ledger under a read lock while
 * an auditor rewrites it under the write lock; try-with-resources unlocks on every path.
 */
public final class LocksSample {

    static final int THREADS = 8;
    static final int DEPOSITS = 1_000;

    /**
     * What the run proves.
     *
     * @param balance the final balance: {@code THREADS * DEPOSITS}
     * @param audits the ledger rewrites done while the readers read
     * @param mutex the mutex's description at the end (its name, unlocked, nobody waiting)
     */
    public record Figures(long balance, int audits, String mutex) {}

    private LocksSample() {}

    /** Runs the threads and returns the figures. */
    public static Figures run() throws InterruptedException {
        Mutex account = Mutex.builder().name("account").build();
        RwLock ledger = RwLock.builder(THREADS).name("ledger").build();
        long[] balance = {0};
        int[] audits = {0};
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            Thread thread = new Thread(() -> {
                try {
                    for (int i = 0; i < DEPOSITS; i++) {
                        try (Permits locked = account.lockBlocking()) {
                            balance[0]++;
                        }
                        if (i % 100 == 0) {
                            try (Permits reading = ledger.readLockBlocking()) {
                                Thread.onSpinWait(); // many readers at once
                            }
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            thread.start();
            threads.add(thread);
        }
        for (int a = 0; a < 10; a++) {
            try (Permits writing = ledger.writeLockBlocking()) { // never starved by the readers
                audits[0]++;
            }
        }
        for (Thread t : threads) {
            t.join();
        }
        return new Figures(balance[0], audits[0], account.toString());
    }

    /** Runs the sample and prints what it shows ({@code args} are ignored). */
    public static void main(String[] args) throws InterruptedException {
        System.out.println("18. Mutex and RwLock with handles");
        Figures f = run();
        System.out.printf(
                "   balance %,d (expected %,d), %d audits under the write lock%n",
                f.balance(), (long) THREADS * DEPOSITS, f.audits());
        System.out.println("   at the end: " + f.mutex());
    }
}
