// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import dev.handoff.Acquisition;
import dev.handoff.FairShareSemaphore;
import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.knowm.xchart.AnnotationLine;
import org.knowm.xchart.AnnotationText;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The chart of the fair-share guide, {@value #FILE}: the permits granted to each of three tenants
 * with shares 1:2:4 as the grants go on, drawn with XChart. The scenario of sample 14
 * ({@code FairShareSample}): a backend of {@value #SLOTS} slots, {@value #REQUESTS_PER_TENANT}
 * requests from each tenant, all queued (in turn: free, pro, enterprise) before the first grant.
 *
 * <p>It is replayed in one thread, so the chart is the same on every run and every machine: every
 * request waits through {@link FairShareSemaphore#acquireThen}, whose waker notes the grant; the
 * slots are given back one at a time, the one held longest first (as workers that each take the
 * same time would), and each release grants the next request in fair order before it returns. The
 * x axis counts grants, not time.
 *
 * <pre>{@code
 * java -cp benchmarks/target/benchmarks.jar dev.handoff.benchmarks.FairShareGrantsChart --out docs/guide
 * }</pre>
 */
public final class FairShareGrantsChart {
    /** The slots of the backend. */
    static final long SLOTS = 7;
    /** The requests of each tenant, one slot each. */
    static final int REQUESTS_PER_TENANT = 200;
    /** The tenants, in the order their requests are queued, and their shares. */
    static final Map<String, Long> SHARES = shares();
    /** The chart's file name. */
    static final String FILE = "fair-share-grants.png";

    private static final Color[] COLORS = {
        new Color(0xf5, 0x9e, 0x0b), new Color(0x10, 0xb9, 0x81), new Color(0x1d, 0x4e, 0xd8),
    };

    private FairShareGrantsChart() {}

    private static Map<String, Long> shares() {
        Map<String, Long> shares = new LinkedHashMap<>();
        shares.put("free", 1L);
        shares.put("pro", 2L);
        shares.put("enterprise", 4L);
        return Collections.unmodifiableMap(shares);
    }

    /**
     * Replays the flood.
     *
     * @return the tenant of every grant, in grant order ({@value #REQUESTS_PER_TENANT} for each)
     * @throws IllegalStateException if a request was not granted or a slot not given back (a bug of the fair share)
     */
    static List<String> grantOrder() {
        FairShareSemaphore<String> backend = FairShareSemaphore.<String>builder(SLOTS)
                .share(tenant -> SHARES.getOrDefault(tenant, 1L))
                .build();
        List<String> order = new ArrayList<>();
        Deque<String> holding = new ArrayDeque<>();
        if (!backend.tryAcquire("maintenance", SLOTS)) {
            throw new IllegalStateException("grantOrder: the backend is not free at the start: " + backend);
        }
        List<Acquisition> requests = new ArrayList<>();
        for (int i = 0; i < REQUESTS_PER_TENANT; i++) {
            for (String tenant : SHARES.keySet()) {
                // The waker runs in the release that grants the request, before that release returns.
                requests.add(backend.acquireThen(tenant, 1, () -> {
                    order.add(tenant);
                    holding.add(tenant);
                }));
            }
        }
        backend.release("maintenance", SLOTS); // the flood is queued: the backend opens
        while (!holding.isEmpty()) {
            backend.release(holding.poll(), 1);
        }
        for (Acquisition a : requests) {
            if (!a.isGranted()) {
                throw new IllegalStateException("grantOrder: a request was not granted: " + a);
            }
        }
        if (order.size() != requests.size() || backend.availablePermits() != SLOTS) {
            throw new IllegalStateException("grantOrder: " + order.size() + " grants for " + requests.size()
                    + " requests, " + backend.availablePermits() + " of " + SLOTS + " slots free at the end");
        }
        return List.copyOf(order);
    }

    /**
     * @param order  the tenants in grant order
     * @param tenant a tenant
     * @return the grants to {@code tenant} after each grant: element {@code k} counts the first {@code k} grants
     */
    static double[] cumulative(List<String> order, String tenant) {
        double[] y = new double[order.size() + 1];
        for (int k = 0; k < order.size(); k++) {
            y[k + 1] = y[k] + (order.get(k).equals(tenant) ? 1 : 0);
        }
        return y;
    }

    /**
     * The points of one tenant's line: the start, each of its grants, and the end, plus the middle
     * of the first segment, which draws nothing new. Why not one point per grant of anyone, and why
     * the middle: XChart puts the ticks of an axis whose values are all equally spaced on every n-th
     * value (0, 21, 42, ...) instead of round numbers; the grant numbers of one tenant are not
     * equally spaced, and the counts 0, 1, 2, ... are not either once 0.5 is among them.
     *
     * @param order  the tenants in grant order
     * @param tenant a tenant
     * @return {x, y}: x the number of grants so far, y the grants to {@code tenant} among them
     */
    static double[][] grantPoints(List<String> order, String tenant) {
        List<double[]> points = new ArrayList<>();
        points.add(new double[] {0, 0});
        int granted = 0;
        for (int k = 0; k < order.size(); k++) {
            if (order.get(k).equals(tenant)) {
                if (granted == 0) {
                    points.add(new double[] {(k + 1) / 2.0, 0.5});
                }
                points.add(new double[] {k + 1, ++granted});
            }
        }
        if (points.get(points.size() - 1)[0] < order.size()) {
            points.add(new double[] {order.size(), granted});
        }
        double[][] xy = new double[2][points.size()];
        for (int j = 0; j < points.size(); j++) {
            xy[0][j] = points.get(j)[0];
            xy[1][j] = points.get(j)[1];
        }
        return xy;
    }

    /**
     * @param order the tenants in grant order
     * @return the number of grants after which the first tenant had all its requests granted
     */
    static int firstDone(List<String> order) {
        Map<String, Integer> granted = new LinkedHashMap<>();
        for (int k = 0; k < order.size(); k++) {
            if (granted.merge(order.get(k), 1, Integer::sum) == REQUESTS_PER_TENANT) {
                return k + 1;
            }
        }
        return order.size();
    }

    /**
     * Writes the chart.
     *
     * @param file  the PNG to write
     * @param order the tenants in grant order, from {@link #grantOrder()}
     * @throws IOException if the file cannot be written
     */
    static void write(Path file, List<String> order) throws IOException {
        XYChart chart = new XYChartBuilder()
                .width(900)
                .height(520)
                .title(String.format(
                        Locale.ROOT,
                        "Permits granted per tenant: shares 1:2:4, %d slots, %d requests each, "
                                + "all queued at the start",
                        SLOTS,
                        REQUESTS_PER_TENANT))
                .xAxisTitle("grants so far (all tenants)")
                .yAxisTitle("grants to the tenant")
                .build();
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNW);
        chart.getStyler().setChartBackgroundColor(Color.WHITE);
        chart.getStyler().setDefaultSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
        chart.getStyler().setAntiAlias(true);
        chart.getStyler().setXAxisDecimalPattern("0");
        chart.getStyler().setYAxisDecimalPattern("0");
        int i = 0;
        for (Map.Entry<String, Long> tenant : SHARES.entrySet()) {
            double[][] points = grantPoints(order, tenant.getKey());
            XYSeries s = chart.addSeries(tenant.getKey() + " (share " + tenant.getValue() + ")", points[0], points[1]);
            s.setLineColor(COLORS[i++ % COLORS.length]);
            s.setLineWidth(2.5f);
            s.setMarker(SeriesMarkers.NONE);
        }
        int done = firstDone(order);
        chart.getStyler().setAnnotationLineColor(Color.DARK_GRAY);
        chart.getStyler()
                .setAnnotationLineStroke(new BasicStroke(
                        1.2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f));
        chart.addAnnotation(new AnnotationLine(done, true, false));
        chart.addAnnotation(
                new AnnotationText("all three wait: 1 : 2 : 4", done / 2.0, REQUESTS_PER_TENANT * 0.93, false));
        chart.addAnnotation(new AnnotationText(
                "enterprise done: 1 : 2, then free alone",
                done + (order.size() - done) / 2.0,
                REQUESTS_PER_TENANT * 0.2,
                false));
        BitmapEncoder.saveBitmap(chart, file.toString(), BitmapEncoder.BitmapFormat.PNG);
    }

    /**
     * Replays the flood, writes {@value #FILE} and prints the grants per tenant every 70 grants.
     *
     * @param args {@code --out DIR}: where the chart goes (default {@code docs/guide})
     * @throws IOException if the chart cannot be written
     * @throws IllegalArgumentException on an unknown argument
     */
    public static void main(String[] args) throws IOException {
        System.setProperty("java.awt.headless", "true");
        Path out = Path.of("docs", "guide");
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--out") && i + 1 < args.length) {
                out = Path.of(args[++i]);
            } else {
                throw new IllegalArgumentException("FairShareGrantsChart: unknown argument '" + args[i]
                        + "'; usage: FairShareGrantsChart [--out DIR]");
            }
        }
        List<String> order = grantOrder();
        Files.createDirectories(out);
        write(out.resolve(FILE), order);
        System.out.println("grants so far | " + String.join(" | ", SHARES.keySet()));
        for (int k = 70; k < order.size() + 70; k += 70) {
            k = Math.min(k, order.size());
            StringBuilder row = new StringBuilder(Integer.toString(k));
            for (String tenant : SHARES.keySet()) {
                row.append(" | ").append((long) cumulative(order, tenant)[k]);
            }
            System.out.println(row);
        }
        System.out.println("first tenant done after " + firstDone(order) + " grants; wrote "
                + out.resolve(FILE).toAbsolutePath().normalize());
    }
}
