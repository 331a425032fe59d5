// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.CategorySeries;
import org.knowm.xchart.style.Styler;

/**
 * The PNG chart of a report, drawn with XChart: one panel of time ratios (ours / peer, log scale,
 * with the parity line) and one of bytes (per operation and per waiter, ours beside
 * each peer). The machine, JDK, date, load average and the load of other processes are in the title.
 */
final class ReportChart {
    private static final int WIDTH = 1400;
    private static final int HEIGHT = 620;

    private ReportChart() {}

    /**
     * Writes the chart.
     *
     * @param file    the PNG to write (".png" is added if missing)
     * @param machine the stamp for the title
     * @param load    the load of other processes, for the title
     * @param timeRows the comparisons of time or throughput, drawn as time ratios
     * @param memoryRows the comparisons of bytes, drawn as absolute values
     * @throws IOException if the file cannot be written
     */
    static void write(Path file, Machine machine, String load, List<Comparison> timeRows, List<Comparison> memoryRows)
            throws IOException {
        List<CategoryChart> panels = new ArrayList<>();
        String title = "handoff vs peers: " + machine.stamp()
                + (Double.isNaN(machine.loadBefore())
                        ? ""
                        : String.format(java.util.Locale.ROOT, ", load average %.1f at start", machine.loadBefore()))
                + ", " + load;
        panels.add(timePanel(title, timeRows));
        if (!memoryRows.isEmpty()) {
            panels.add(memoryPanel(memoryRows));
        }
        BitmapEncoder.saveBitmap(panels, panels.size(), 1, file.toString(), BitmapEncoder.BitmapFormat.PNG);
    }

    private static CategoryChart timePanel(String title, List<Comparison> rows) {
        CategoryChart chart = new CategoryChartBuilder()
                .width(WIDTH)
                .height(HEIGHT)
                .title(title)
                .yAxisTitle("time per operation, handoff / peer (log; below 1 = handoff faster)")
                .build();
        style(chart);
        chart.getStyler().setYAxisLogarithmic(true);
        chart.getStyler().setOverlapped(true);
        List<String> labels = new ArrayList<>();
        List<Double> ratios = new ArrayList<>();
        double low = 1;
        double high = 1;
        for (Comparison c : rows) {
            Estimate r = c.costRatio();
            if (Double.isNaN(r.value()) || r.value() <= 0) {
                continue;
            }
            // No error bars on this panel: XChart 3.8 centres a bar's error bar on the axis origin
            // when the bar is below 1 on a log axis, which would draw them wrong. They are in the
            // table (results.md); the range of the axis still covers them.
            double factor = 1 + r.error() / r.value();
            labels.add(shortWorkload(c.workload()) + " vs " + c.peer());
            ratios.add(r.value());
            low = Math.min(low, r.value() / factor);
            high = Math.max(high, r.value() * factor);
        }
        if (labels.isEmpty()) {
            labels.add("no data");
            ratios.add(1.0);
        }
        // XChart anchors bars at zero, which a log axis cannot show: set the range explicitly, in
        // whole decades around the bars, their error bars and the parity line.
        chart.getStyler().setYAxisMin(Math.pow(10, Math.floor(Math.log10(low))));
        chart.getStyler().setYAxisMax(Math.pow(10, Math.ceil(Math.log10(high * 1.01))));
        chart.getStyler().setYAxisDecimalPattern("0.###");
        CategorySeries bars = chart.addSeries("handoff / peer (99.9% CIs: see results.md)", labels, ratios);
        bars.setFillColor(new Color(0x3b, 0x82, 0xf6));
        CategorySeries parity = chart.addSeries("parity", labels, Collections.nCopies(labels.size(), 1.0));
        parity.setChartCategorySeriesRenderStyle(CategorySeries.CategorySeriesRenderStyle.Line);
        parity.setLineColor(Color.DARK_GRAY);
        parity.setMarker(org.knowm.xchart.style.markers.SeriesMarkers.NONE);
        return chart;
    }

    private static CategoryChart memoryPanel(List<Comparison> rows) {
        CategoryChart chart = new CategoryChartBuilder()
                .width(WIDTH)
                .height(HEIGHT)
                .title("memory: bytes allocated per operation (-prof gc) and live bytes per suspended waiter")
                .yAxisTitle("bytes")
                .build();
        style(chart);
        List<String> labels = new ArrayList<>();
        List<Double> ours = new ArrayList<>();
        List<Double> oursErr = new ArrayList<>();
        List<Double> theirs = new ArrayList<>();
        List<Double> theirsErr = new ArrayList<>();
        for (Comparison c : rows) {
            labels.add(shortWorkload(c.workload()) + ", " + c.metric() + ", vs " + c.peer());
            ours.add(c.ours().value());
            oursErr.add(c.ours().error());
            theirs.add(c.theirs().value());
            theirsErr.add(c.theirs().error());
        }
        chart.addSeries("handoff", labels, ours, oursErr).setFillColor(new Color(0x3b, 0x82, 0xf6));
        chart.addSeries("peer", labels, theirs, theirsErr).setFillColor(new Color(0x9c, 0xa3, 0xaf));
        return chart;
    }

    private static void style(CategoryChart chart) {
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNE);
        chart.getStyler().setXAxisLabelRotation(20);
        chart.getStyler().setChartBackgroundColor(Color.WHITE);
        chart.getStyler().setPlotGridVerticalLinesVisible(false);
        chart.getStyler().setErrorBarsColor(Color.BLACK);
        chart.getStyler().setYAxisDecimalPattern("0.##");
        chart.getStyler().setAntiAlias(true);
    }

    private static String shortWorkload(String workload) {
        return BenchmarkReport.SHORT.getOrDefault(workload, workload);
    }
}
