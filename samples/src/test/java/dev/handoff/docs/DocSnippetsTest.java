// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The documentation's code blocks are the compiled, tested sources: every fenced block in
 * README.md, CONTRIBUTING.md and docs/ (but the generated docs/benchmarks/) is preceded by
 * {@code <!-- snippet: NAME -->} and equals, character for character once the common indentation
 * is removed, the region {@code tag::NAME[]} ... {@code end::NAME[]} of a file under
 * {@code samples/src/test/{java,kotlin,resources}/.../docs}. The Java and Kotlin regions are
 * compiled with this module's tests and run by {@code JavaSnippetsTest}, {@code KotlinSnippetsTest}
 * and {@code IntegrationSnippetsTest}; the build snippets are checked against the poms below.
 *
 * <p>To change an example: edit its region, run this test, and paste the region it prints.
 */
class DocSnippetsTest {

    static final Pattern TAG = Pattern.compile("(?://|#|<!--)\\s*(tag|end)::([\\w-]+)\\[\\]");
    static final Pattern MARK = Pattern.compile("^<!-- snippet: ([\\w-]+) -->$");

    static Path root;
    static Map<String, String> regions;
    static List<Block> blocks;

    record Block(Path file, int line, String name, String language, String text) {
        @Override
        public String toString() {
            return root.relativize(file) + ":" + line + (name == null ? "" : " (" + name + ")");
        }
    }

    @BeforeAll
    static void read() throws IOException {
        root = Path.of("").toAbsolutePath();
        while (!Files.exists(root.resolve("README.md")) || !Files.exists(root.resolve("samples"))) {
            root = root.getParent();
        }
        regions = new LinkedHashMap<>();
        for (String dir : List.of("samples/src/test/java/dev/handoff/docs",
                "samples/src/test/kotlin/dev/handoff/docs", "samples/src/test/resources/docs")) {
            try (Stream<Path> files = Files.walk(root.resolve(dir))) {
                for (Path f : files.filter(Files::isRegularFile).sorted().toList()) {
                    regions.putAll(regionsOf(f));
                }
            }
        }
        blocks = new ArrayList<>();
        for (Path doc : docs()) {
            blocks.addAll(blocksOf(doc));
        }
    }

    static List<Path> docs() throws IOException {
        List<Path> docs = new ArrayList<>(List.of(root.resolve("README.md"), root.resolve("CONTRIBUTING.md"),
                root.resolve("CHANGELOG.md")));
        try (Stream<Path> files = Files.walk(root.resolve("docs"))) {
            files.filter(f -> f.toString().endsWith(".md"))
                    .filter(f -> !root.resolve("docs/benchmarks").equals(f.getParent()))
                    .sorted()
                    .forEach(docs::add);
        }
        return docs;
    }

    /**
     * The regions of one file. A region may be given in parts (the same tag opened and closed
     * again, as for imports at the top of a file and code further down): the parts are joined
     * with a blank line, each with its own indentation removed.
     */
    static Map<String, String> regionsOf(Path file) throws IOException {
        Map<String, List<String>> open = new LinkedHashMap<>();
        Map<String, String> done = new LinkedHashMap<>();
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            Matcher m = TAG.matcher(line);
            if (m.find()) {
                String name = m.group(2);
                if (m.group(1).equals("tag")) {
                    if (open.put(name, new ArrayList<>()) != null) {
                        throw new AssertionError(file + ": tag::" + name + " opened twice");
                    }
                } else {
                    List<String> lines = open.remove(name);
                    if (lines == null) throw new AssertionError(file + ": end::" + name + " without tag::");
                    done.merge(name, dedent(lines), (before, part) -> before + "\n\n" + part);
                }
                continue;
            }
            open.values().forEach(lines -> lines.add(line));
        }
        if (!open.isEmpty()) throw new AssertionError(file + ": unclosed regions " + open.keySet());
        return done;
    }

    static String dedent(List<String> lines) {
        int indent = lines.stream().filter(l -> !l.isBlank())
                .mapToInt(l -> l.length() - l.stripLeading().length()).min().orElse(0);
        return lines.stream().map(l -> l.isBlank() ? "" : l.substring(indent).stripTrailing())
                .collect(Collectors.joining("\n"));
    }

    static List<Block> blocksOf(Path doc) throws IOException {
        List<String> lines = Files.readAllLines(doc, StandardCharsets.UTF_8);
        List<Block> found = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            if (!line.startsWith("```")) continue;
            String language = line.substring(3).strip();
            String name = null;
            if (i > 0) {
                Matcher m = MARK.matcher(lines.get(i - 1).strip());
                if (m.matches()) name = m.group(1);
            }
            int start = i + 1;
            int end = start;
            while (end < lines.size() && !lines.get(end).startsWith("```")) end++;
            if (end == lines.size()) throw new AssertionError(doc + ":" + (i + 1) + ": unclosed code block");
            found.add(new Block(doc, i + 1, name, language, String.join("\n", lines.subList(start, end))));
            i = end;
        }
        return found;
    }

    @Test
    void everyBlockIsARegionOfATestedSource() {
        List<String> problems = new ArrayList<>();
        for (Block b : blocks) {
            if (b.name() == null) {
                problems.add(b + ": a code block without <!-- snippet: NAME --> above it");
            } else if (!regions.containsKey(b.name())) {
                problems.add(b + ": no region tag::" + b.name() + "[] in the snippet sources");
            } else if (!regions.get(b.name()).equals(b.text())) {
                problems.add(b + ": differs from its source; the source's region reads:\n" + regions.get(b.name()));
            }
            if (b.language().isEmpty()) problems.add(b + ": a code block without a language");
        }
        assertTrue(problems.isEmpty(), () -> String.join("\n\n", problems));
        assertFalse(blocks.isEmpty());
    }

    @Test
    void everyRegionIsShownSomewhere() {
        Set<String> unused = new TreeSet<>(regions.keySet());
        blocks.forEach(b -> unused.remove(b.name()));
        assertTrue(unused.isEmpty(), () -> "regions no document shows (stale examples?): " + unused);
    }

    @Test
    void kotlinBlocksThatMakeAPrimitiveImportIt() {
        List<String> problems = new ArrayList<>();
        for (Block b : blocks) {
            if (!b.language().equals("kotlin")) continue;
            for (String type : List.of("Semaphore", "Mutex", "RwLock")) {
                boolean makes = Pattern.compile("(?<![.\\w])" + type + "\\(").matcher(b.text()).find();
                if (makes && !b.text().contains("import dev.handoff." + type + "\n")) {
                    problems.add(b + " calls " + type + "(...) without import dev.handoff." + type
                            + ": without it, the name may resolve to kotlinx's");
                }
            }
        }
        assertTrue(problems.isEmpty(), () -> String.join("\n", problems));
    }

    @Test
    void kotlinBlocksUseThisOnlyInsideAClass() {
        List<String> problems = new ArrayList<>();
        for (Block b : blocks) {
            if (b.language().equals("kotlin") && Pattern.compile("\\bthis\\b").matcher(b.text()).find()
                    && !Pattern.compile("\\b(class|object)\\s+\\w+").matcher(b.text()).find()) {
                problems.add(b + " uses `this` outside any class: it does not compile at top level");
            }
        }
        assertTrue(problems.isEmpty(), () -> String.join("\n", problems));
    }

    /**
     * The ratios quoted by the README and docs/performance.md ("0.95 ± 0.13") are those of the
     * generated docs/benchmarks/results.md, rounded: a new benchmark run that changes them fails
     * here until the prose follows.
     */
    @Test
    void performanceFiguresComeFromTheGeneratedResults() throws IOException {
        Pattern pair = Pattern.compile("(\\d+(?:\\.\\d+)?(?:e-?\\d+)?) ± (\\d+(?:\\.\\d+)?(?:e-?\\d+)?)");
        List<double[]> measured = new ArrayList<>();
        Matcher r = pair.matcher(Files.readString(root.resolve("docs/benchmarks/results.md")));
        while (r.find()) {
            measured.add(new double[] {Double.parseDouble(r.group(1)), Double.parseDouble(r.group(2))});
        }
        List<String> problems = new ArrayList<>();
        int quoted = 0;
        for (String doc : List.of("README.md", "docs/performance.md")) {
            for (String line : Files.readAllLines(root.resolve(doc), StandardCharsets.UTF_8)) {
                if (!line.startsWith("|")) continue;
                Matcher m = pair.matcher(line);
                while (m.find()) {
                    quoted++;
                    String value = m.group(1);
                    String error = m.group(2);
                    boolean found = measured.stream().anyMatch(x -> rounds(x[0], value) && rounds(x[1], error));
                    if (!found) problems.add(doc + ": " + m.group() + " is in no row of docs/benchmarks/results.md");
                }
            }
        }
        assertTrue(problems.isEmpty(), () -> String.join("\n", problems));
        assertTrue(quoted >= 10, "quoted ratios found: " + quoted);
    }

    /** Whether {@code x} rounds (half up) to {@code shown}, at the number of decimals shown. */
    static boolean rounds(double x, String shown) {
        int decimals = shown.contains(".") ? shown.length() - shown.indexOf('.') - 1 : 0;
        return new java.math.BigDecimal(x).setScale(decimals, java.math.RoundingMode.HALF_UP)
                .compareTo(new java.math.BigDecimal(shown)) == 0;
    }

    @Test
    void readmeIsAtMost15Kilobytes() throws IOException {
        long size = Files.size(root.resolve("README.md"));
        assertTrue(size <= 15_000, "README.md is " + size + " bytes");
    }

    @Test
    void theFirstSnippetSaysWhatAnOversizedBodyDoes() {
        Block first = blocks.stream().filter(b -> b.file().endsWith("README.md"))
                .filter(b -> b.language().equals("java")).findFirst().orElseThrow();
        String prose = first.text().replaceAll("//", " ").replaceAll("\\s+", " ");
        assertTrue(prose.contains("larger than the capacity") && prose.contains("IllegalArgumentException"),
                "the README's first Java example must say what a body above the capacity does:\n" + first.text());
    }

    @Test
    void userDocsSpeakToUsers() throws IOException {
        Pattern process = Pattern.compile("\\b(issue|seed|turn) #?\\d+|\\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\\d)[0-9a-f]{7,40}\\b",
                Pattern.CASE_INSENSITIVE);
        List<String> problems = new ArrayList<>();
        for (Path doc : docs()) {
            List<String> lines = Files.readAllLines(doc, StandardCharsets.UTF_8);
            for (int i = 0; i < lines.size(); i++) {
                Matcher m = process.matcher(lines.get(i));
                if (m.find()) problems.add(root.relativize(doc) + ":" + (i + 1) + ": '" + m.group() + "'");
                String lower = lines.get(i).toLowerCase();
                if (lower.contains("synchronized") && lower.contains("pin") && !lower.contains("jdk 24")) {
                    problems.add(root.relativize(doc) + ":" + (i + 1)
                            + ": pinning by synchronized ended with JDK 24 (JEP 491); say which JDKs");
                }
            }
        }
        assertTrue(problems.isEmpty(), () -> "process words or stale claims in user docs:\n" + String.join("\n", problems));
    }

    @Test
    void relativeLinksPointAtFiles() throws IOException {
        Pattern link = Pattern.compile("\\]\\(([^)#\\s]+)(#[^)]*)?\\)");
        List<String> problems = new ArrayList<>();
        for (Path doc : docs()) {
            Matcher m = link.matcher(Files.readString(doc));
            while (m.find()) {
                String target = m.group(1);
                if (target.contains("://") || target.startsWith("mailto:")) continue;
                Path resolved = doc.getParent().resolve(target).normalize();
                if (!Files.exists(resolved)) {
                    problems.add(root.relativize(doc) + ": " + target);
                }
            }
        }
        assertTrue(problems.isEmpty(), () -> "broken links:\n" + String.join("\n", problems));
    }

    @Test
    void buildSnippetsNameRealModulesAndTheBuildVersion() throws IOException {
        // The version the build makes: a -SNAPSHOT (installed from a clone) until a release sets it.
        String parent = Files.readString(root.resolve("pom.xml"));
        Matcher v = Pattern.compile("<artifactId>handoff-parent</artifactId>\\s*<version>([^<]+)</version>").matcher(parent);
        assertTrue(v.find());
        String version = v.group(1);
        Set<String> published = new TreeSet<>();
        for (String module : List.of("bom", "java-core", "kotlin-ext", "reactor", "micrometer", "jfr", "zookeeper", "adaptive", "edge", "grpc", "ktor", "servlet")) {
            String pom = Files.readString(root.resolve(module).resolve("pom.xml"));
            Matcher a = Pattern.compile("<artifactId>([^<]+)</artifactId>")
                    .matcher(pom.replaceAll("(?s)<parent>.*?</parent>", ""));
            assertTrue(a.find(), module);
            published.add(a.group(1));
        }
        Pattern maven = Pattern.compile("<artifactId>(handoff-[\\w-]+)</artifactId>(\\s*<version>([^<]+)</version>)?");
        Pattern gradle = Pattern.compile("\"dev\\.handoff:(handoff-[\\w-]+)(:([^\"]+))?\"");
        List<String> problems = new ArrayList<>();
        int seen = 0;
        for (Block b : blocks) {
            for (Pattern p : List.of(maven, gradle)) {
                Matcher m = p.matcher(b.text());
                while (m.find()) {
                    seen++;
                    if (!published.contains(m.group(1))) problems.add(b + ": " + m.group(1) + " is not published");
                    if (m.group(3) != null && !m.group(3).equals(version)) {
                        problems.add(b + ": version " + m.group(3) + ", the build makes " + version);
                    }
                }
            }
            Matcher pl = Pattern.compile("-pl ([\\w,-]+)").matcher(b.text());
            while (pl.find()) {
                for (String module : pl.group(1).split(",")) {
                    if (!Files.exists(root.resolve(module).resolve("pom.xml"))) problems.add(b + ": no module " + module);
                }
            }
        }
        assertTrue(problems.isEmpty(), () -> String.join("\n", problems));
        assertTrue(seen >= published.size(), "every published module is shown with its coordinates: " + seen);
        assertEquals(12, published.size());
    }
}
