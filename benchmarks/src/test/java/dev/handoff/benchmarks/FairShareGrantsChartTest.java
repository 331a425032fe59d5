// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The guide's chart of grants per tenant: the replay is deterministic, keeps the fair share's
 * bound at every grant, and writes the same PNG twice.
 */
class FairShareGrantsChartTest {
    private static final List<String> TENANTS = new ArrayList<>(FairShareGrantsChart.SHARES.keySet());

    @Test
    void theReplayIsTheSameEveryTimeAndGrantsEveryRequest() {
        List<String> order = FairShareGrantsChart.grantOrder();
        assertEquals(order, FairShareGrantsChart.grantOrder());
        assertEquals(TENANTS.size() * FairShareGrantsChart.REQUESTS_PER_TENANT, order.size());
        for (String tenant : TENANTS) {
            assertEquals(FairShareGrantsChart.REQUESTS_PER_TENANT, Collections.frequency(order, tenant), tenant);
        }
    }

    @Test
    void whileTenantsWaitTheirGrantsOverSharesStayWithinTheBound() {
        List<String> order = FairShareGrantsChart.grantOrder();
        Map<String, Integer> granted = new HashMap<>();
        for (int k = 0; k < order.size(); k++) {
            granted.merge(order.get(k), 1, Integer::sum);
            // Every pair of tenants that both still wait after this grant: weight-1 requests, so
            // |g(a)/w(a) - g(b)/w(b)| <= 1/w(a) + 1/w(b) over the stretch from the first grant.
            for (String a : TENANTS) {
                for (String b : TENANTS) {
                    int ga = granted.getOrDefault(a, 0);
                    int gb = granted.getOrDefault(b, 0);
                    if (a.compareTo(b) >= 0
                            || ga == FairShareGrantsChart.REQUESTS_PER_TENANT
                            || gb == FairShareGrantsChart.REQUESTS_PER_TENANT) {
                        continue;
                    }
                    double wa = FairShareGrantsChart.SHARES.get(a);
                    double wb = FairShareGrantsChart.SHARES.get(b);
                    assertTrue(
                            Math.abs(ga / wa - gb / wb) <= 1 / wa + 1 / wb,
                            "after grant " + (k + 1) + ": " + a + " " + ga + ", " + b + " " + gb);
                }
            }
        }
        // Share 4 is done first, after about 7/4 of its 200 grants; share 1 last.
        int done = FairShareGrantsChart.firstDone(order);
        assertEquals("enterprise", order.get(done - 1));
        assertTrue(Math.abs(done - 350) <= 3, "enterprise done after " + done);
        assertEquals("free", order.get(order.size() - 1));
    }

    @Test
    void theCumulativeSeriesCountTheGrants() {
        double[] pro = FairShareGrantsChart.cumulative(List.of("free", "pro", "pro", "enterprise"), "pro");
        assertArrayEquals(new double[] {0, 0, 1, 2, 2}, pro);
        double[][] points = FairShareGrantsChart.grantPoints(List.of("free", "pro", "pro", "enterprise"), "pro");
        assertArrayEquals(new double[] {0, 1, 2, 3, 4}, points[0]);
        assertArrayEquals(new double[] {0, 0.5, 1, 2, 2}, points[1]);
        assertEquals(3, FairShareGrantsChart.firstDone(List.of("free", "pro", "free"))); // nobody done: all of them
    }

    @Test
    void theChartIsWrittenAndTheSameTwice() throws Exception {
        Path dir = Files.createDirectories(Path.of("target", "fair-share-chart"));
        FairShareGrantsChart.main(new String[] {"--out", dir.toString()});
        byte[] first = Files.readAllBytes(dir.resolve(FairShareGrantsChart.FILE));
        FairShareGrantsChart.write(dir.resolve("again.png"), FairShareGrantsChart.grantOrder());
        assertTrue(first.length > 10_000, "chart of " + first.length + " bytes");
        assertArrayEquals(first, Files.readAllBytes(dir.resolve("again.png")));
    }
}
