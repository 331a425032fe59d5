// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.zookeeper.Lease;
import dev.handoff.zookeeper.ZooKeeperSemaphore;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;

/**
 * Sample 14: a replica that crashes while it holds cluster-wide permits does not keep them.
 *
 * <p>The budget of {@link ClusterBudgetSample}, {@value ClusterBudgetSample#BUDGET_MIB} MiB for three
 * replicas. Replica C takes {@link #CRASH_HOLD_MIB} MiB; A and B then ask for 6 MiB each and wait,
 * since only 4 are free. C crashes: its client goes away without releasing. Its session ends,
 * ZooKeeper deletes its request node, and A and B are granted by themselves, nobody having to clean
 * up. It prints what C held, the requests still waiting before the crash and granted after it, and
 * whether the whole budget could be taken again at the end.
 */
public final class CrashedReplicaSample {

    /** What replica C holds when it crashes. */
    static final long CRASH_HOLD_MIB = 8;

    /** What the run measured. */
    public record Figures(long crashedHeld, int waitingBeforeCrash, int grantedAfterCrash, boolean fullBudgetAfter) {}

    private CrashedReplicaSample() {}

    /** Runs the three replicas against a fresh in-process ZooKeeper and returns the figures. */
    public static Figures run() throws Exception {
        long budget = ClusterBudgetSample.BUDGET_MIB;
        try (InProcessZooKeeper zookeeper = new InProcessZooKeeper()) {
            ZooKeeperSemaphore a = new ZooKeeperSemaphore(zookeeper.connect(), ClusterBudgetSample.PATH, budget);
            ZooKeeperSemaphore b = new ZooKeeperSemaphore(zookeeper.connect(), ClusterBudgetSample.PATH, budget);
            CuratorFramework clientC = zookeeper.connect();
            Lease held =
                    new ZooKeeperSemaphore(clientC, ClusterBudgetSample.PATH, budget).acquireBlocking(CRASH_HOLD_MIB);
            CompletableFuture<Lease> fromA = a.acquireAsync(6);
            CompletableFuture<Lease> fromB = b.acquireAsync(6);
            Thread.sleep(200); // time enough to be granted, were 6 MiB free
            int waiting = (fromA.isDone() ? 0 : 1) + (fromB.isDone() ? 0 : 1);
            clientC.close(); // the crash: no release; C's session ends
            int granted = 0;
            for (CompletableFuture<Lease> request : List.of(fromA, fromB)) {
                try (Lease lease = request.get(30, TimeUnit.SECONDS)) {
                    granted += lease.isValid() ? 1 : 0;
                }
            }
            Optional<Lease> all = a.tryAcquireBlocking(budget, Duration.ofSeconds(10));
            all.ifPresent(Lease::close);
            return new Figures(held.permits(), waiting, granted, all.isPresent());
        }
    }

    /** Runs the sample and prints its figures ({@code args} are ignored). */
    public static void main(String[] args) throws Exception {
        System.out.println("14. A crashed replica's permits come back with its ZooKeeper session");
        Figures f = run();
        System.out.println(
                "   replica C crashed holding " + f.crashedHeld() + " MiB; requests of A and B waiting before: "
                        + f.waitingBeforeCrash() + ", granted after: " + f.grantedAfterCrash());
        System.out.println("   the whole budget granted again at the end: " + f.fullBudgetAfter());
    }
}
