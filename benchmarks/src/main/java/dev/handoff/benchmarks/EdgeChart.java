// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.internal.chartpart.Chart;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The chart of the edge benchmark ({@link EdgeBenchmark}), drawn with XChart: the server's
 * in-flight count over time per contender (log scale, with the knee), the polite tenant's p50 and
 * p99 latency per contender (log scale), and each tenant's goodput per contender.
 */
final class EdgeChart {
    private static final int WIDTH = 1000;
    private static final int HEIGHT = 420;
    private static final Color[] COLORS = {
        new Color(0x6b, 0x72, 0x80),
        new Color(0xf5, 0x9e, 0x0b),
        new Color(0xef, 0x44, 0x44),
        new Color(0xec, 0x48, 0x99),
        new Color(0x0e, 0xa5, 0xe9),
        new Color(0x1d, 0x4e, 0xd8),
        new Color(0x10, 0xb9, 0x81),
    };

    private EdgeChart() {}

    /**
     * Writes the chart: three panels, one above the other.
     *
     * @param file the PNG to write
     * @param report the run
     * @throws IOException if the file cannot be written
     */
    static void write(Path file, EdgeBenchmark.Report report) throws IOException {
        List<Chart<?, ?>> panels = new ArrayList<>();
        panels.add(inFlightPanel(report));
        panels.add(latencyPanel(report));
        panels.add(goodputPanel(report));
        BitmapEncoder.saveBitmap(panels, panels.size(), 1, file.toString(), BitmapEncoder.BitmapFormat.PNG);
    }

    private static XYChart inFlightPanel(EdgeBenchmark.Report report) {
        EdgeBenchmark.Settings s = report.settings();
        XYChart chart = new XYChartBuilder()
                .width(WIDTH)
                .height(HEIGHT)
                .title(String.format(
                        Locale.ROOT,
                        "calls in service at the server: polite %.0f/s + noisy %.0f/s = %.0f%% of its capacity",
                        s.politeRate(),
                        s.politeRate() * 10,
                        100 * s.totalRate() / s.capacityPerSecond()))
                .xAxisTitle("seconds")
                .yAxisTitle("calls in service (log)")
                .build();
        chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
        chart.getStyler().setLegendFont(chart.getStyler().getLegendFont().deriveFont(10f));
        chart.getStyler().setChartBackgroundColor(Color.WHITE);
        chart.getStyler().setAntiAlias(true);
        chart.getStyler().setYAxisLogarithmic(true);
        chart.getStyler().setYAxisMin(1.0);
        chart.getStyler().setXAxisDecimalPattern("0");
        chart.getStyler().setYAxisDecimalPattern("0");
        double yMax = 10;
        for (EdgeBenchmark.Result r : report.results()) {
            double[] y = r.inFlight().clone();
            if (y.length == 0) {
                continue;
            }
            double[] x = new double[y.length];
            for (int k = 0; k < y.length; k++) {
                x[k] = (k + 1) * EdgeBenchmark.SAMPLE_MILLIS / 1e3;
                y[k] = Math.max(1, y[k]);
                yMax = Math.max(yMax, y[k]);
            }
            XYSeries series = chart.addSeries(r.contender(), x, y);
            series.setLineColor(color(r.contender()));
            series.setLineWidth(r.contender().startsWith("handoff") ? 2.5f : 1.5f);
            series.setMarker(SeriesMarkers.NONE);
        }
        XYSeries knee = chart.addSeries("the knee", new double[] {0, s.seconds()}, new double[] {s.knee(), s.knee()});
        knee.setLineColor(Color.BLACK);
        knee.setLineStyle(
                new BasicStroke(1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f));
        knee.setMarker(SeriesMarkers.NONE);
        chart.getStyler().setYAxisMax(yMax * 1.5);
        return chart;
    }

    private static CategoryChart latencyPanel(EdgeBenchmark.Report report) {
        CategoryChart chart = bars(
                String.format(
                        Locale.ROOT,
                        "the polite tenant's latency, answered calls (log); run of %s, %s",
                        report.machine().date(),
                        report.load().shortText()),
                "ms (log)");
        chart.getStyler().setYAxisLogarithmic(true);
        List<String> names = names(report);
        List<Double> p50 = new ArrayList<>();
        List<Double> p99 = new ArrayList<>();
        double low = 1;
        double high = 10;
        for (EdgeBenchmark.Result r : report.results()) {
            double a = positive(r.polite().p50Millis());
            double b = positive(r.polite().p99Millis());
            p50.add(a);
            p99.add(b);
            low = Math.min(low, a);
            high = Math.max(high, b);
        }
        chart.getStyler().setYAxisMin(Math.pow(10, Math.floor(Math.log10(low))));
        chart.getStyler().setYAxisMax(Math.pow(10, Math.ceil(Math.log10(high * 1.01))));
        chart.addSeries("p50", names, p50).setFillColor(new Color(0x93, 0xc5, 0xfd));
        chart.addSeries("p99", names, p99).setFillColor(new Color(0x1d, 0x4e, 0xd8));
        return chart;
    }

    private static CategoryChart goodputPanel(EdgeBenchmark.Report report) {
        CategoryChart chart = bars(
                "goodput: calls answered within the deadline, per second"
                        + String.format(
                                Locale.ROOT,
                                " (the polite tenant asks %.0f/s)",
                                report.settings().politeRate()),
                "calls/s");
        List<String> names = names(report);
        List<Double> polite = new ArrayList<>();
        List<Double> noisy = new ArrayList<>();
        for (EdgeBenchmark.Result r : report.results()) {
            polite.add(r.polite().goodputPerSecond());
            noisy.add(r.noisy().goodputPerSecond());
        }
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNW);
        chart.addSeries("polite tenant", names, polite).setFillColor(new Color(0x10, 0xb9, 0x81));
        chart.addSeries("noisy tenant", names, noisy).setFillColor(new Color(0xf5, 0x9e, 0x0b));
        return chart;
    }

    private static CategoryChart bars(String title, String yTitle) {
        CategoryChart chart = new CategoryChartBuilder()
                .width(WIDTH)
                .height(HEIGHT)
                .title(title)
                .yAxisTitle(yTitle)
                .build();
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNE);
        chart.getStyler().setChartBackgroundColor(Color.WHITE);
        chart.getStyler().setPlotGridVerticalLinesVisible(false);
        chart.getStyler().setXAxisLabelRotation(12);
        chart.getStyler()
                .setAxisTickLabelsFont(chart.getStyler().getAxisTickLabelsFont().deriveFont(10f));
        chart.getStyler().setYAxisDecimalPattern("0.#");
        chart.getStyler().setAntiAlias(true);
        return chart;
    }

    /** Short names for the bars: the table has the full ones. */
    private static List<String> names(EdgeBenchmark.Report report) {
        List<String> names = new ArrayList<>();
        for (EdgeBenchmark.Result r : report.results()) {
            names.add(r.contender()
                    .replace("handoff AdmissionInterceptor, ", "handoff ")
                    .replace("java.util.concurrent.Semaphore (tryAcquire)", "j.u.c. Semaphore")
                    .replace("Netflix limiter, partitioned 50/50 by tenant", "Netflix partitioned")
                    .replace("Netflix SimpleLimiter (default: Vegas)", "Netflix SimpleLimiter"));
        }
        return names;
    }

    private static double positive(double v) {
        return Double.isNaN(v) || v <= 0 ? 0.1 : v;
    }

    private static Color color(String contender) {
        return COLORS[EdgeContenders.INDEX.apply(contender) % COLORS.length];
    }
}
