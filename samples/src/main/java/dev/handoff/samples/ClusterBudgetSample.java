// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.zookeeper.Lease;
import dev.handoff.zookeeper.ZooKeeperSemaphore;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Sample 13: three replicas share one budget through ZooKeeper.
 *
 * <p>A service runs as three replicas; together they may send at most {@link #BUDGET_MIB} MiB at
 * once to a shared downstream. Each replica is a separate Curator client (here three clients in one
 * process, on an in-process ZooKeeper server) with its own {@link ZooKeeperSemaphore} on the same
 * path: every upload takes as many cluster-wide permits as it has MiB, in one all-or-nothing
 * request, strictly in arrival order across the replicas. It prints the uploads completed and the
 * most MiB in flight across the replicas, counted after each grant and before each release: never
 * above the budget.
 */
public final class ClusterBudgetSample {

    /** At most 12 MiB in flight across all replicas. */
    static final long BUDGET_MIB = 12;

    static final String PATH = "/budgets/downstream-mib";
    static final int REPLICAS = 3;
    private static final int WORKERS_PER_REPLICA = 3;
    private static final int UPLOADS_PER_WORKER = 12;

    /** What the run measured. */
    public record Figures(long budget, long peakInFlight, int uploads, long completed) {}

    private ClusterBudgetSample() {}

    /** Runs the three replicas against a fresh in-process ZooKeeper and returns the figures. */
    public static Figures run() throws Exception {
        AtomicLong inFlight = new AtomicLong();
        AtomicLong peak = new AtomicLong();
        AtomicLong completed = new AtomicLong();
        ExecutorService workers = Executors.newFixedThreadPool(REPLICAS * WORKERS_PER_REPLICA);
        try (InProcessZooKeeper zookeeper = new InProcessZooKeeper()) {
            for (int r = 0; r < REPLICAS; r++) {
                ZooKeeperSemaphore replica = new ZooKeeperSemaphore(zookeeper.connect(), PATH, BUDGET_MIB);
                for (int w = 0; w < WORKERS_PER_REPLICA; w++) {
                    Random sizes = new Random(r * WORKERS_PER_REPLICA + w);
                    workers.submit(() -> {
                        for (int i = 0; i < UPLOADS_PER_WORKER; i++) {
                            long mib = 1 + sizes.nextInt(6);
                            try (Lease lease = replica.acquireBlocking(mib)) { // released when the block ends
                                peak.accumulateAndGet(inFlight.addAndGet(mib), Math::max);
                                Thread.sleep(2); // the upload
                                inFlight.addAndGet(-mib); // counted out before the release
                            }
                            completed.incrementAndGet();
                        }
                        return null;
                    });
                }
            }
            workers.shutdown();
            if (!workers.awaitTermination(1, TimeUnit.MINUTES)) {
                throw new IllegalStateException("the uploads did not finish within a minute");
            }
        } finally {
            workers.shutdownNow();
        }
        return new Figures(
                BUDGET_MIB, peak.get(), REPLICAS * WORKERS_PER_REPLICA * UPLOADS_PER_WORKER, completed.get());
    }

    /** Runs the sample and prints its figures ({@code args} are ignored). */
    public static void main(String[] args) throws Exception {
        System.out.println("13. Cluster budget: three replicas share " + BUDGET_MIB + " MiB through ZooKeeper");
        Figures f = run();
        System.out.println("   uploads of 1..6 MiB completed: " + f.completed() + " of " + f.uploads());
        System.out.println(
                "   peak MiB in flight across the replicas: " + f.peakInFlight() + " (budget " + f.budget() + ")");
    }
}
