// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The chart of the adaptive-capacity simulation, drawn with XChart: per scenario, the capacity
 * (limit) over time of ours, two Netflix algorithms through the bridge, Netflix's two limiters and the
 * best static capacity, with the downstream's knee; and the p99 latency of each one-second bucket,
 * with the target (twice the unloaded p99). The table has every contender.
 */
final class AdaptiveChart {
    private static final int WIDTH = 900;
    private static final int HEIGHT = 380;
    private static final Color[] COLORS = {
        new Color(0x1d, 0x4e, 0xd8), new Color(0xf5, 0x9e, 0x0b), new Color(0x10, 0xb9, 0x81),
                new Color(0xef, 0x44, 0x44),
        new Color(0x8b, 0x5c, 0xf6), new Color(0x6b, 0x72, 0x80), new Color(0xec, 0x48, 0x99),
                new Color(0x0e, 0xa5, 0xe9),
    };

    private AdaptiveChart() {}

    /**
     * Writes the chart: one row per scenario, capacity on the left, p99 on the right.
     *
     * @param file the PNG to write
     * @param comparisons the scenarios' results
     * @throws IOException if the file cannot be written
     */
    static void write(Path file, List<AdaptiveSimulation.Comparison> comparisons) throws IOException {
        List<XYChart> grid = new ArrayList<>();
        for (AdaptiveSimulation.Comparison c : comparisons) {
            grid.add(capacityPanel(c));
            grid.add(latencyPanel(c));
        }
        BitmapEncoder.saveBitmap(grid, comparisons.size(), 2, file.toString(), BitmapEncoder.BitmapFormat.PNG);
    }

    /** Drawn: ours, two Netflix algorithms through the bridge, Netflix's two limiters, the best static capacity (the table has all). */
    static final java.util.Set<String> DRAWN = java.util.Set.of(
            AdaptiveSimulation.OURS,
            "handoff + Gradient2Limit",
            "handoff + VegasLimit",
            "Netflix SimpleLimiter (Gradient2)",
            "Netflix BlockingLimiter (Gradient2)");

    private static List<AdaptiveSimulation.Result> shown(AdaptiveSimulation.Comparison c) {
        List<AdaptiveSimulation.Result> rows = new ArrayList<>();
        for (AdaptiveSimulation.Result r : c.contenders()) {
            if (DRAWN.contains(r.contender())) {
                rows.add(r);
            }
        }
        if (c.bestStatic() != null) {
            rows.add(c.bestStatic());
        }
        return rows;
    }

    private static XYChart capacityPanel(AdaptiveSimulation.Comparison c) {
        XYChart chart = new XYChartBuilder()
                .width(WIDTH)
                .height(HEIGHT)
                .title(c.scenario().name() + ": capacity (limit) over time, virtual clock")
                .xAxisTitle("seconds")
                .yAxisTitle("capacity (permits)")
                .build();
        style(chart);
        int i = 0;
        double yMax = 10;
        for (AdaptiveSimulation.Result r : shown(c)) {
            double[] y = r.limitTimeline();
            double[] x = new double[y.length];
            for (int k = 0; k < y.length; k++) {
                x[k] = k * AdaptiveSimulation.TIMELINE_STEP / 1e9;
                yMax = Math.max(yMax, Math.min(y[k], 200));
            }
            XYSeries s = chart.addSeries(label(c, r), x, clip(y, 200));
            line(s, COLORS[i++ % COLORS.length], r.contender().equals(AdaptiveSimulation.OURS) ? 3f : 1.3f);
        }
        AdaptiveSimulation.Scenario sc = c.scenario();
        int points = (int) (sc.durationNanos() / AdaptiveSimulation.TIMELINE_STEP);
        double[] kx = new double[points];
        double[] ky = new double[points];
        for (int k = 0; k < points; k++) {
            kx[k] = k * AdaptiveSimulation.TIMELINE_STEP / 1e9;
            ky[k] = sc.kneeAt(k * AdaptiveSimulation.TIMELINE_STEP);
        }
        XYSeries knee = chart.addSeries("the downstream's knee", kx, ky);
        knee.setLineColor(Color.BLACK);
        knee.setLineStyle(
                new BasicStroke(1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f));
        knee.setMarker(SeriesMarkers.NONE);
        chart.getStyler().setYAxisMin(0.0);
        chart.getStyler().setYAxisMax(Math.min(200, yMax * 1.1));
        return chart;
    }

    private static XYChart latencyPanel(AdaptiveSimulation.Comparison c) {
        XYChart chart = new XYChartBuilder()
                .width(WIDTH)
                .height(HEIGHT)
                .title(c.scenario().name() + ": p99 call latency per second")
                .xAxisTitle("seconds")
                .yAxisTitle("p99 latency (ms)")
                .build();
        style(chart);
        int i = 0;
        for (AdaptiveSimulation.Result r : shown(c)) {
            double[] y = r.p99Timeline();
            double[] x = new double[y.length];
            for (int k = 0; k < y.length; k++) {
                x[k] = (k + 0.5) * AdaptiveSimulation.BUCKET / 1e9;
                if (Double.isNaN(y[k])) {
                    y[k] = 0;
                }
            }
            XYSeries s = chart.addSeries(label(c, r), x, y);
            line(s, COLORS[i++ % COLORS.length], r.contender().equals(AdaptiveSimulation.OURS) ? 3f : 1.3f);
        }
        double end = c.scenario().durationNanos() / 1e9;
        double target = 2 * c.scenario().unloadedP99Millis();
        XYSeries t = chart.addSeries("target: 2x unloaded p99", new double[] {0, end}, new double[] {target, target});
        t.setLineColor(Color.BLACK);
        t.setLineStyle(
                new BasicStroke(1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f));
        t.setMarker(SeriesMarkers.NONE);
        chart.getStyler().setYAxisMin(0.0);
        chart.getStyler().setYAxisMax(AdaptiveSimulation.CALL_TIMEOUT / 1e6 * 1.1);
        return chart;
    }

    private static String label(AdaptiveSimulation.Comparison c, AdaptiveSimulation.Result r) {
        return c.bestStatic() != null && r == c.bestStatic()
                ? "best static: " + r.contender().substring(AdaptiveSimulation.STATIC.length())
                : r.contender();
    }

    private static double[] clip(double[] y, double max) {
        double[] out = new double[y.length];
        for (int i = 0; i < y.length; i++) {
            out[i] = Math.min(max, y[i]);
        }
        return out;
    }

    private static void line(XYSeries s, Color color, float width) {
        s.setLineColor(color);
        s.setLineWidth(width);
        s.setMarker(SeriesMarkers.NONE);
    }

    private static void style(XYChart chart) {
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNE);
        chart.getStyler().setLegendFont(chart.getStyler().getLegendFont().deriveFont(10f));
        chart.getStyler().setChartBackgroundColor(Color.WHITE);
        chart.getStyler().setDefaultSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
        chart.getStyler().setAntiAlias(true);
        chart.getStyler().setXAxisDecimalPattern("0");
        chart.getStyler().setYAxisDecimalPattern("0");
    }
}
