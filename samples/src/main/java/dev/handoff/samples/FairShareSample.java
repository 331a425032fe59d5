// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.FairShareSemaphore;
import dev.handoff.Permits;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Sample 20: one backend shared fairly by three tenants with shares 1:2:4.
 *
 * <p>Under a plain FIFO limit, the tenant that floods first makes everyone else wait behind its whole
 * backlog. A {@link FairShareSemaphore} keyed by tenant serves the tenants of a backend of
 * {@link #SLOTS} slots in proportion to their plan: {@code free} has share 1, {@code pro} 2,
 * {@code enterprise} 4. All three flood it at once. It prints the grants of each tenant so far,
 * every 70 grants: about 1:2:4 while all three wait; then, once a tenant has nothing left to wait
 * for, its share goes to the others. Every request completes.
 */
public final class FairShareSample {

    static final long SLOTS = 7;
    static final int REQUESTS_PER_TENANT = 200;
    static final Map<String, Long> SHARES = Map.of("free", 1L, "pro", 2L, "enterprise", 4L);

    /** What the run measured: the tenant of every grant, in grant order (as recorded by the granting threads). */
    public record Figures(List<String> grantOrder, int completed, long availableAfter) {}

    private FairShareSample() {}

    /** Floods the backend from the three tenants, records the order of the grants and returns the figures. */
    public static Figures run() throws InterruptedException {
        FairShareSemaphore<String> backend = FairShareSemaphore.<String>builder(SLOTS)
                .share(tenant -> SHARES.getOrDefault(tenant, 1L))
                .build();
        List<String> grants = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch done = new CountDownLatch(3 * REQUESTS_PER_TENANT);
        ExecutorService workers = Executors.newFixedThreadPool((int) SLOTS);
        try {
            Permits busy = backend.acquireAsync("maintenance", SLOTS).join(); // the flood queues before any grant
            for (int i = 0; i < REQUESTS_PER_TENANT; i++) {
                for (String tenant : List.of("free", "pro", "enterprise")) {
                    backend.acquireAsync(tenant, 1).thenAccept(slot -> {
                        grants.add(tenant); // on the granting thread: in grant order
                        workers.execute(() -> {
                            try (slot) { // released however the call ends
                                LockSupport.parkNanos(20_000); // the call to the backend
                            } finally {
                                done.countDown();
                            }
                        });
                    });
                }
            }
            busy.release();
            done.await(1, TimeUnit.MINUTES);
        } finally {
            workers.shutdown();
        }
        return new Figures(
                List.copyOf(grants), (int) (3L * REQUESTS_PER_TENANT - done.getCount()), backend.availablePermits());
    }

    /** Runs the flood and prints the figures ({@code args} are ignored). */
    public static void main(String[] args) throws InterruptedException {
        Figures f = run();
        System.out.println("20. Fair share: three tenants with shares 1:2:4 flood one backend of " + SLOTS + " slots");
        System.out.println("   grants so far    free    pro  enterprise");
        for (int n = 70; n < f.grantOrder().size() + 70; n += 70) {
            List<String> first =
                    f.grantOrder().subList(0, Math.min(n, f.grantOrder().size()));
            System.out.printf(
                    "   %13d  %6d %6d %11d%n",
                    first.size(),
                    Collections.frequency(first, "free"),
                    Collections.frequency(first, "pro"),
                    Collections.frequency(first, "enterprise"));
        }
        System.out.println("   completed " + f.completed() + " of " + 3 * REQUESTS_PER_TENANT + ", free slots after: "
                + f.availableAfter());
    }
}
