// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.FairShareSemaphore;
import dev.handoff.Permits;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.HashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * Sample 14: one backend shared fairly by three tenants with shares 1:2:4.
 *
 * <p>A multi-tenant service sends every request to one backend that can take {@link #SLOTS}
 * requests at once. With a plain FIFO limit, the tenant that floods first makes everyone else wait
 * behind its whole backlog. A {@link FairShareSemaphore} keyed by tenant serves the tenants in
 * proportion to their plan: {@code free} has share 1, {@code pro} 2, {@code enterprise} 4. All
 * three flood the backend with {@link #REQUESTS_PER_TENANT} requests at once; while all three still
 * wait, the backend's slots go to them about 1:2:4 (each request takes one slot, so the grants of
 * two tenants, divided by their shares, never differ by more than 1/share(a) + 1/share(b)), and every
 * request completes in the end.
 */
public final class FairShareSample {

    /** Requests the backend runs at once. */
    static final long SLOTS = 7;

    /** How many requests each tenant sends. */
    static final int REQUESTS_PER_TENANT = 200;

    /** The tenants and their shares. */
    static final Map<String, Long> SHARES = Map.of("free", 1L, "pro", 2L, "enterprise", 4L);

    private FairShareSample() {
    }

    /**
     * What the run proves.
     *
     * @param grantOrder the tenant of every grant, in grant order
     * @param backlogged how many of the first grants came while all three tenants still waited (up to
     *     the first tenant's 190th)
     * @param free grants to {@code free} among those
     * @param pro grants to {@code pro} among those
     * @param enterprise grants to {@code enterprise} among those
     * @param completed the requests that completed
     * @param availableAfter the free slots at the end, equal to {@link #SLOTS}
     */
    public record Figures(List<String> grantOrder, int backlogged, int free, int pro, int enterprise, int completed,
                          long availableAfter) {
    }

    /**
     * Runs the flood and prints the figures.
     *
     * @param args ignored
     */
    public static void main(String[] args) {
        Figures f = run();
        System.out.println("14. Fair share: three tenants with shares 1:2:4 flood one backend of " + SLOTS + " slots");
        System.out.println("   while all three waited (" + f.backlogged() + " grants): free " + f.free() + ", pro " + f.pro()
                + ", enterprise " + f.enterprise() + "  (ratio 1 : " + ratio(f.pro(), f.free()) + " : "
                + ratio(f.enterprise(), f.free()) + ")");
        System.out.println("   completed " + f.completed() + " of " + 3 * REQUESTS_PER_TENANT + ", free slots after: "
                + f.availableAfter());
    }

    private static String ratio(int a, int b) {
        return b == 0 ? "-" : String.format("%.2f", (double) a / b);
    }

    /**
     * Floods the backend from the three tenants and records the order of the grants.
     *
     * @return the figures
     */
    public static Figures run() {
        FairShareSemaphore<String> backend = FairShareSemaphore.<String>builder(SLOTS)
                .share(tenant -> SHARES.getOrDefault(tenant, 1L))
                .name("backend")
                .build();
        List<String> grants = Collections.synchronizedList(new ArrayList<>());
        int total = 3 * REQUESTS_PER_TENANT;
        CountDownLatch done = new CountDownLatch(total);
        ExecutorService workers = Executors.newFixedThreadPool((int) SLOTS);
        try {
            // The backend is busy when the flood arrives: everything queues first.
            Permits warmUp = backend.acquireAsync("maintenance", SLOTS).join();
            for (int i = 0; i < REQUESTS_PER_TENANT; i++) {
                for (String tenant : List.of("free", "pro", "enterprise")) {
                    backend.acquireAsync(tenant, 1).thenAccept(slot -> {
                        grants.add(tenant); // on the thread that granted it, in grant order
                        workers.execute(() -> {
                            try (slot) { // released however the call ends
                                callBackend();
                            } finally {
                                done.countDown();
                            }
                        });
                    });
                }
            }
            warmUp.release();
            done.await(1, TimeUnit.MINUTES);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            workers.shutdown();
        }
        synchronized (grants) {
            // The grants made while every tenant surely still had requests waiting: up to the first
            // tenant's 190th recorded grant. Grants are recorded by the threads that made them, so one
            // record can come late (a descheduled thread); stopping 10 short keeps that out of the ratios.
            Map<String, Integer> seen = new HashMap<>();
            int backlogged = 0;
            while (backlogged < grants.size()
                    && seen.merge(grants.get(backlogged), 1, Integer::sum) < REQUESTS_PER_TENANT - 10) {
                backlogged++;
            }
            List<String> window = grants.subList(0, backlogged);
            return new Figures(List.copyOf(grants), backlogged, Collections.frequency(window, "free"),
                    Collections.frequency(window, "pro"), Collections.frequency(window, "enterprise"), grants.size(),
                    backend.availablePermits());
        }
    }

    /** Stands for the call to the backend: a little CPU work. */
    private static void callBackend() {
        long x = 0;
        for (int i = 0; i < 20_000; i++) {
            x += i * 31L ^ x;
        }
        if (x == 42) {
            System.out.print("");
        }
    }
}
