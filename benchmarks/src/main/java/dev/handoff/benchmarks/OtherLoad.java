// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The CPU used by <em>other</em> processes while the benchmarks measure, from Linux's {@code /proc}:
 * the busy CPU time of the whole machine ({@code /proc/stat}) minus the CPU time of this run's own
 * processes (the report JVM and its descendants: JMH forks, footprint JVMs), per window, in CPUs
 * (1.0 = one core busy for the whole window).
 *
 * <p>The parsing takes the files' text, so it is tested on synthetic snapshots; {@link
 * Snapshot#read(Path, long)} reads a real {@code /proc} (or a directory laid out like one).
 *
 * <p>Accounting, all in the kernel's clock ticks ({@code USER_HZ}):
 * <ul>
 *   <li>busy = user + nice + system + irq + softirq + steal of the {@code cpu} line of
 *       {@code /proc/stat} (guest time is already inside user and nice; idle and iowait are not
 *       busy). Steal counts: it is CPU another guest took from this VM.</li>
 *   <li>ours = the sum over the report JVM and every descendant of {@code utime + stime + cutime +
 *       cstime} from {@code /proc/<pid>/stat}. The children's part ({@code cutime + cstime}) keeps
 *       the sum continuous when a fork exits: its time moves into its parent's children time when
 *       the parent reaps it. A process absent from a snapshot counts 0.</li>
 *   <li>window length = the growth of the {@code cpu} line's total (busy + idle + iowait) divided by
 *       the number of {@code cpuN} lines, so no tick rate is assumed.</li>
 *   <li>other load = (Δbusy − Δours) / window length, at least 0.</li>
 * </ul>
 * The machine-wide figures are sampled per tick by the kernel, the per-process ones are precise,
 * so a 1 s window has an uncertainty of a few hundredths of a CPU; windows shorter than
 * {@link #MIN_WINDOW_SECONDS} are recorded but not judged.
 */
final class OtherLoad {
    /** A measured window in which other processes used more than this many CPUs is flagged. */
    static final double THRESHOLD_CPUS = 0.25;

    /** Windows shorter than this are too coarse for the tick counters and are not judged. */
    static final double MIN_WINDOW_SECONDS = 0.2;

    /** How many other processes a window names. */
    static final int TOP = 3;

    private OtherLoad() {}

    /**
     * The machine-wide CPU time, from the {@code cpu} lines of {@code /proc/stat}.
     *
     * @param busy  ticks spent on anything but idle and iowait, all CPUs together
     * @param total busy + idle + iowait, all CPUs together
     * @param cpus  the number of {@code cpuN} lines
     */
    record CpuTicks(long busy, long total, int cpus) {
        /**
         * @param procStat the text of {@code /proc/stat}
         * @return its {@code cpu} lines, summed up
         * @throws IllegalArgumentException if there is no aggregate {@code cpu} line or no {@code cpuN} line
         */
        static CpuTicks parse(String procStat) {
            long[] all = null;
            int cpus = 0;
            for (String line : procStat.split("\n")) {
                if (line.startsWith("cpu ")) {
                    String[] f = line.trim().split("\\s+");
                    all = new long[10];
                    for (int i = 1; i < f.length && i <= all.length; i++) {
                        all[i - 1] = Long.parseLong(f[i]);
                    }
                } else if (line.length() > 3 && line.startsWith("cpu") && Character.isDigit(line.charAt(3))) {
                    cpus++;
                }
            }
            if (all == null || cpus == 0) {
                throw new IllegalArgumentException("not a /proc/stat: no 'cpu' and 'cpuN' lines");
            }
            // user nice system idle iowait irq softirq steal guest guest_nice
            long busy = all[0] + all[1] + all[2] + all[5] + all[6] + all[7];
            return new CpuTicks(busy, busy + all[3] + all[4], cpus);
        }
    }

    /**
     * One process, from {@code /proc/<pid>/stat}.
     *
     * @param pid    the process id
     * @param name   the command name (the field in parentheses)
     * @param parent the parent's pid
     * @param start  the start time in ticks after boot (with the pid, tells a reused pid apart)
     * @param ticks  {@code utime + stime + cutime + cstime}: its CPU time and its reaped children's
     */
    record ProcessTicks(long pid, String name, long parent, long start, long ticks) {
        /**
         * @param stat the text of {@code /proc/<pid>/stat}
         * @return the fields used here
         * @throws IllegalArgumentException if the text is not such a line
         */
        static ProcessTicks parse(String stat) {
            int open = stat.indexOf('(');
            int close = stat.lastIndexOf(')'); // the name may itself contain ')' and spaces
            if (open < 0 || close < open) {
                throw new IllegalArgumentException("not a /proc/<pid>/stat line: " + stat);
            }
            String[] f = stat.substring(close + 1).trim().split("\\s+");
            // f[0] is field 3 (state): field k of proc(5) is f[k - 3]
            if (f.length < 20) {
                throw new IllegalArgumentException("not a /proc/<pid>/stat line (too few fields): " + stat);
            }
            long ticks = Long.parseLong(f[11]) + Long.parseLong(f[12]) + Long.parseLong(f[13]) + Long.parseLong(f[14]);
            return new ProcessTicks(
                    Long.parseLong(stat.substring(0, open).trim()),
                    stat.substring(open + 1, close),
                    Long.parseLong(f[1]),
                    Long.parseLong(f[19]),
                    ticks);
        }
    }

    /**
     * The machine and its processes at one moment.
     *
     * @param nanos     {@link System#nanoTime()} when it was taken (for the window's length in seconds)
     * @param cpu       the machine-wide ticks
     * @param processes every process, by pid
     */
    record Snapshot(long nanos, CpuTicks cpu, Map<Long, ProcessTicks> processes) {
        /**
         * @param nanos    when
         * @param procStat the text of {@code /proc/stat}
         * @param pidStats the texts of the {@code /proc/<pid>/stat} files
         * @return the snapshot
         */
        static Snapshot parse(long nanos, String procStat, Collection<String> pidStats) {
            Map<Long, ProcessTicks> processes = new HashMap<>();
            for (String s : pidStats) {
                ProcessTicks p = ProcessTicks.parse(s);
                processes.put(p.pid(), p);
            }
            return new Snapshot(nanos, CpuTicks.parse(procStat), processes);
        }

        /**
         * Reads {@code proc/stat} and every {@code proc/<digits>/stat}; a process that ends while
         * it is read is left out.
         *
         * @param proc  {@code /proc}, or a directory laid out like it
         * @param nanos when
         * @return the snapshot
         * @throws IOException if {@code proc/stat} cannot be read
         */
        static Snapshot read(Path proc, long nanos) throws IOException {
            String stat = Files.readString(proc.resolve("stat"));
            List<String> pidStats = new ArrayList<>();
            try (DirectoryStream<Path> entries = Files.newDirectoryStream(proc)) {
                for (Path entry : entries) {
                    String name = entry.getFileName().toString();
                    if (name.isEmpty() || !name.chars().allMatch(Character::isDigit)) {
                        continue;
                    }
                    try {
                        pidStats.add(Files.readString(entry.resolve("stat")));
                    } catch (NoSuchFileException e) {
                        // ended meanwhile
                    } catch (IOException e) {
                        // unreadable or ended meanwhile (ESRCH): it is not ours either way
                    }
                }
            }
            return parse(nanos, stat, pidStats);
        }

        /**
         * @param root a pid
         * @return {@code root} and all its descendants in this snapshot (empty if {@code root} is absent)
         */
        Set<Long> family(long root) {
            Map<Long, List<Long>> children = new HashMap<>();
            for (ProcessTicks p : processes.values()) {
                children.computeIfAbsent(p.parent(), k -> new ArrayList<>()).add(p.pid());
            }
            Set<Long> family = new HashSet<>();
            if (!processes.containsKey(root)) {
                return family;
            }
            Deque<Long> todo = new ArrayDeque<>(List.of(root));
            while (!todo.isEmpty()) {
                long pid = todo.pop();
                if (family.add(pid)) {
                    todo.addAll(children.getOrDefault(pid, List.of()));
                }
            }
            return family;
        }

        /** @return the ticks of {@code root}'s family, children's time included */
        long familyTicks(long root) {
            long sum = 0;
            for (long pid : family(root)) {
                sum += processes.get(pid).ticks();
            }
            return sum;
        }
    }

    /**
     * Another process's share of a window.
     *
     * @param pid  its pid
     * @param name its command name
     * @param cpus its CPU time in the window (with the children it reaped), in CPUs
     */
    record ProcessLoad(long pid, String name, double cpus) {
        @Override
        public String toString() {
            return String.format(Locale.ROOT, "%s (pid %d) %.2f CPU", name, pid, cpus);
        }
    }

    /**
     * One window, usually one measured iteration of one benchmark.
     *
     * @param label     what was measured then
     * @param seconds   its length
     * @param otherCpus the CPUs used by other processes, on average over the window
     * @param top       the other processes that used the most, at most {@link #TOP}
     */
    record Window(String label, double seconds, double otherCpus, List<ProcessLoad> top) {
        /** @return whether the window is long enough to be judged */
        boolean judged() {
            return seconds >= MIN_WINDOW_SECONDS;
        }

        /** @return whether it is judged and other processes used more than {@link #THRESHOLD_CPUS} */
        boolean overThreshold() {
            return judged() && otherCpus > THRESHOLD_CPUS;
        }

        /** @return e.g. "0.61 CPU during X (1.0 s); others: cc1 (pid 12) 0.50 CPU, ..." */
        String describe() {
            StringBuilder s = new StringBuilder(
                    String.format(Locale.ROOT, "%.2f CPU during %s (%.2f s)", otherCpus, label, seconds));
            if (!top.isEmpty()) {
                s.append("; top other processes: ");
                for (int i = 0; i < top.size(); i++) {
                    s.append(i == 0 ? "" : ", ").append(top.get(i));
                }
            }
            return s.toString();
        }
    }

    /**
     * The load of other processes between two snapshots.
     *
     * @param label  what was measured in between
     * @param before the snapshot at the start
     * @param after  the snapshot at the end
     * @param self   the pid of the report JVM: it and its descendants are ours, the rest is other
     * @return the window
     */
    static Window between(String label, Snapshot before, Snapshot after, long self) {
        double seconds = (after.nanos() - before.nanos()) / 1e9;
        double perCpu = (after.cpu().total() - before.cpu().total())
                / (double) after.cpu().cpus();
        if (perCpu <= 0) {
            return new Window(clean(label), seconds, 0, List.of());
        }
        long ours = after.familyTicks(self) - before.familyTicks(self);
        long others = (after.cpu().busy() - before.cpu().busy()) - ours;
        Set<Long> ourPids = new HashSet<>(after.family(self));
        ourPids.addAll(before.family(self));
        List<ProcessLoad> top = new ArrayList<>();
        for (ProcessTicks p : after.processes().values()) {
            if (ourPids.contains(p.pid())) {
                continue;
            }
            ProcessTicks earlier = before.processes().get(p.pid());
            long delta = earlier != null && earlier.start() == p.start() ? p.ticks() - earlier.ticks() : p.ticks();
            if (delta > 0) {
                top.add(new ProcessLoad(p.pid(), clean(p.name()), delta / perCpu));
            }
        }
        top.sort(Comparator.comparingDouble(ProcessLoad::cpus).reversed());
        return new Window(
                clean(label),
                seconds,
                Math.max(0, others) / perCpu,
                List.copyOf(top.subList(0, Math.min(TOP, top.size()))));
    }

    /** @return {@code s} without the characters results.tsv uses as separators */
    static String clean(String s) {
        return s.replaceAll("[\\t\\n\\r;]", " ");
    }

    /**
     * What a run found: the worst judged window, the flagged ones, the average over the run.
     *
     * @param measured   whether {@code /proc} could be read at all
     * @param windows    the measured windows recorded
     * @param judged     how many of them were long enough to be judged
     * @param worst      the judged window with the most other load, or {@code null}
     * @param runAverage other processes' load over the whole run, NaN if not measured
     * @param flagged    the judged windows above {@link #THRESHOLD_CPUS}, in order
     */
    record Summary(boolean measured, int windows, int judged, Window worst, double runAverage, List<Window> flagged) {
        /** @return a summary saying that nothing could be measured */
        static Summary unmeasured() {
            return new Summary(false, 0, 0, null, Double.NaN, List.of());
        }

        /**
         * @param windows    the measured windows, in order
         * @param runAverage the load over the whole run
         * @return their summary
         */
        static Summary of(List<Window> windows, double runAverage) {
            Window worst = null;
            int judged = 0;
            List<Window> flagged = new ArrayList<>();
            for (Window w : windows) {
                if (!w.judged()) {
                    continue;
                }
                judged++;
                if (worst == null || w.otherCpus() > worst.otherCpus()) {
                    worst = w;
                }
                if (w.overThreshold()) {
                    flagged.add(w);
                }
            }
            return new Summary(true, windows.size(), judged, worst, runAverage, List.copyOf(flagged));
        }

        /** @return whether other processes loaded the machine during a judged window */
        boolean loaded() {
            return !flagged.isEmpty();
        }

        /** @return a few words for the chart's title, e.g. "others ≤ 0.04 CPU" (other processes) */
        String shortText() {
            if (!measured) {
                return "others' CPU n/a";
            }
            return worst == null
                    ? String.format(Locale.ROOT, "others %.2f CPU avg", runAverage)
                    : String.format(Locale.ROOT, "others ≤ %.2f CPU", worst.otherCpus());
        }

        /** @return the Markdown paragraph of results.md */
        String markdown() {
            if (!measured) {
                return "Load of other processes: **not measured** (no readable /proc on this OS).\n";
            }
            StringBuilder md = new StringBuilder();
            md.append(String.format(
                    Locale.ROOT,
                    "Load of other processes (from /proc: the machine's busy CPU time "
                            + "minus this run's own JVMs), limit %.2f CPU per measured iteration: ",
                    THRESHOLD_CPUS));
            if (worst == null) {
                md.append(String.format(
                        Locale.ROOT,
                        "no measured iteration was long enough to judge (%d under %.1f s); ",
                        windows,
                        MIN_WINDOW_SECONDS));
            } else {
                md.append(String.format(
                        Locale.ROOT,
                        "**at most %.2f CPU** in %d measured iterations (worst: %s); ",
                        worst.otherCpus(),
                        judged,
                        worst.label()));
            }
            md.append(String.format(Locale.ROOT, "%.2f CPU on average over the whole run.%n", runAverage));
            if (!flagged.isEmpty()) {
                md.append(String.format(
                        Locale.ROOT,
                        "%n**%d measured iterations had other processes above %.2f CPU:**%n%n",
                        flagged.size(),
                        THRESHOLD_CPUS));
                for (Window w : flagged.subList(0, Math.min(20, flagged.size()))) {
                    md.append("- ").append(w.describe()).append('\n');
                }
                if (flagged.size() > 20) {
                    md.append("- ... and ").append(flagged.size() - 20).append(" more\n");
                }
            }
            return md.toString();
        }

        /** @return lines for results.tsv, read back by {@link #parseTsv} */
        String tsv() {
            StringBuilder t = new StringBuilder();
            t.append(String.join(
                            "\t",
                            "load",
                            Boolean.toString(measured),
                            Integer.toString(windows),
                            Integer.toString(judged),
                            Double.toString(runAverage)))
                    .append('\n');
            if (worst != null) {
                t.append(windowTsv("worst", worst));
            }
            for (Window w : flagged) {
                t.append(windowTsv("flagged", w));
            }
            return t.toString();
        }

        private static String windowTsv(String kind, Window w) {
            // top: "pid,cpus,name; pid,cpus,name" (names and labels hold no tab, newline or ';')
            StringBuilder top = new StringBuilder();
            for (ProcessLoad p : w.top()) {
                top.append(top.length() == 0 ? "" : "; ")
                        .append(p.pid())
                        .append(',')
                        .append(p.cpus())
                        .append(',')
                        .append(p.name());
            }
            return String.join(
                            "\t",
                            "loadwindow",
                            kind,
                            w.label(),
                            Double.toString(w.seconds()),
                            Double.toString(w.otherCpus()),
                            top)
                    + "\n";
        }

        /**
         * @param lines the {@code load} and {@code loadwindow} lines of a results.tsv, split on tabs
         * @return the summary; {@link #unmeasured()} if there are none (a file from before the guard)
         */
        static Summary parseTsv(List<String[]> lines) {
            boolean measured = false;
            int windows = 0;
            int judged = 0;
            double runAverage = Double.NaN;
            Window worst = null;
            List<Window> flagged = new ArrayList<>();
            for (String[] f : lines) {
                if (f[0].equals("load")) {
                    measured = Boolean.parseBoolean(f[1]);
                    windows = Integer.parseInt(f[2]);
                    judged = Integer.parseInt(f[3]);
                    runAverage = Double.parseDouble(f[4]);
                } else {
                    List<ProcessLoad> top = new ArrayList<>();
                    if (!f[5].isEmpty()) {
                        for (String p : f[5].split("; ")) {
                            String[] q = p.split(",", 3);
                            top.add(new ProcessLoad(Long.parseLong(q[0]), q[2], Double.parseDouble(q[1])));
                        }
                    }
                    Window w = new Window(f[2], Double.parseDouble(f[3]), Double.parseDouble(f[4]), List.copyOf(top));
                    if (f[1].equals("worst")) {
                        worst = w;
                    } else {
                        flagged.add(w);
                    }
                }
            }
            return measured
                    ? new Summary(true, windows, judged, worst, runAverage, List.copyOf(flagged))
                    : unmeasured();
        }
    }
}
