// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * results.tsv: a {@link Report} as tab-separated values, one line for the run, one per measurement
 * (and per attempt measured again), one per note, then the load windows; and back
 * ({@code --redraw} renders results.md and the chart again from it, so every figure that the
 * Markdown or the chart shows must survive the round trip). Older files, without the spread, the
 * cross-core probe or the storm's fields, are still read.
 */
final class ReportTsv {
    private ReportTsv() {}

    /** @return the report as tab-separated values, read back by {@link #parse} ({@code --redraw}) */
    static String of(Report r) {
        StringBuilder t = new StringBuilder();
        Machine machine = r.machine();
        t.append(String.join(
                        "\t",
                        "run",
                        machine.cpu(),
                        Integer.toString(machine.cores()),
                        machine.os(),
                        machine.jdk(),
                        machine.date().toString(),
                        Double.toString(machine.loadBefore()),
                        Double.toString(r.loadAfter()),
                        Double.toString(r.seconds()),
                        Boolean.toString(r.smoke()),
                        Integer.toString(r.waiters())))
                .append('\n');
        for (Map<String, Measurement> byPeer : r.measured().values()) {
            for (Measurement m : byPeer.values()) {
                t.append(tsvFields(m)).append('\n');
            }
        }
        for (Measurement m : r.remeasured()) {
            t.append("remeasured\t").append(tsvFields(m)).append('\n');
        }
        for (String note : r.notes()) {
            t.append("note\t")
                    .append(note.replace('\t', ' ').replace('\n', ' '))
                    .append('\n');
        }
        t.append(r.load().tsv());
        return t.toString();
    }

    private static String tsvFields(Measurement m) {
        Estimate b = m.bytesPerOp();
        return String.join(
                "\t",
                m.benchmark(),
                m.peer(),
                Double.toString(m.score().value()),
                Double.toString(m.score().error()),
                m.unit(),
                b == null ? "" : Double.toString(b.value()),
                b == null ? "" : Double.toString(b.error()),
                Long.toString(m.acquisitions()),
                Long.toString(m.suspended()),
                Double.toString(m.spread()),
                Double.toString(m.crossCore()),
                stormFields(m.storm()));
    }

    private static String stormFields(Storm s) {
        if (s == null) {
            return String.join("\t", "", "", "", "", "", "", "");
        }
        return String.join(
                "\t",
                s.cpuPerOp() == null ? "" : Double.toString(s.cpuPerOp().value()),
                s.cpuPerOp() == null ? "" : Double.toString(s.cpuPerOp().error()),
                Double.toString(s.cpus()),
                Double.toString(s.p99().value()),
                Double.toString(s.p99().error()),
                Double.toString(s.max()),
                s.jdk());
    }

    /** @return the storm of a results.tsv line (fields 11-17), or null: an older file, or not a storm */
    private static Storm parseStorm(String[] f) {
        if (f.length < 18 || f[14].isEmpty()) {
            return null;
        }
        return new Storm(
                f[11].isEmpty() ? null : new Estimate(Double.parseDouble(f[11]), Double.parseDouble(f[12])),
                Double.parseDouble(f[13]),
                new Estimate(Double.parseDouble(f[14]), Double.parseDouble(f[15])),
                Double.parseDouble(f[16]),
                f[17]);
    }

    /**
     * @param tsv what {@link #of} wrote
     * @return the report
     * @throws IllegalArgumentException if the text is not such a report
     */
    static Report parse(String tsv) {
        String[] lines = tsv.split("\n");
        String[] run = lines[0].split("\t", -1);
        if (run.length != 11 || !run[0].equals("run")) {
            throw new IllegalArgumentException("not a results.tsv: " + lines[0]);
        }
        Machine machine = new Machine(
                run[1],
                Integer.parseInt(run[2]),
                run[3],
                run[4],
                java.time.LocalDate.parse(run[5]),
                Double.parseDouble(run[6]));
        Map<String, Map<String, Measurement>> measured = new LinkedHashMap<>();
        List<String[]> loadLines = new ArrayList<>();
        List<Measurement> remeasured = new ArrayList<>();
        List<String> notes = new ArrayList<>();
        for (int i = 1; i < lines.length; i++) {
            String[] f = lines[i].split("\t", -1);
            if (f[0].equals("load") || f[0].equals("loadwindow")) {
                loadLines.add(f);
                continue;
            }
            if (f[0].equals("note")) {
                notes.add(f[1]);
                continue;
            }
            boolean replaced = f[0].equals("remeasured");
            if (replaced) {
                f = Arrays.copyOfRange(f, 1, f.length);
            }
            Estimate bytes = f[5].isEmpty() ? null : new Estimate(Double.parseDouble(f[5]), Double.parseDouble(f[6]));
            Measurement m = new Measurement(
                    f[0],
                    f[1],
                    new Estimate(Double.parseDouble(f[2]), Double.parseDouble(f[3])),
                    f[4],
                    bytes,
                    Long.parseLong(f[7]),
                    Long.parseLong(f[8]),
                    f.length > 9 ? Double.parseDouble(f[9]) : Double.NaN, // older files: not known
                    f.length > 10 ? Double.parseDouble(f[10]) : Double.NaN,
                    parseStorm(f));
            if (replaced) {
                remeasured.add(m);
            } else {
                measured.computeIfAbsent(m.benchmark(), k -> new LinkedHashMap<>())
                        .put(m.peer(), m);
            }
        }
        return new Report(
                machine,
                Double.parseDouble(run[7]),
                Double.parseDouble(run[8]),
                Boolean.parseBoolean(run[9]),
                Integer.parseInt(run[10]),
                measured,
                OtherLoad.Summary.parseTsv(loadLines),
                remeasured,
                notes);
    }
}
