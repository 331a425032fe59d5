// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The CI run of the edge benchmark: every contender for 1 s against the gRPC server with a knee,
 * under the documented load, then the report and the chart. The figures depend on the machine and
 * are not asserted; the invariants are: every call sent ended exactly one way (answered, shed or
 * timed out, no other status), the server finished all its work, every permit came back, the
 * in-flight count was sampled, and the report has a row for every contender.
 */
class EdgeBenchmarkSmokeTest {

    @Test
    void everyContenderRunsAndEveryCallEnds() throws Exception {
        EdgeBenchmark.Report report = EdgeBenchmark.run(EdgeBenchmark.Settings.smoke(), EdgeContenders.all());
        List<EdgeContenders.Contender> contenders = EdgeContenders.all();
        assertEquals(contenders.size(), report.results().size());
        String table = EdgeBenchmark.table(report.results());
        for (int i = 0; i < contenders.size(); i++) {
            EdgeBenchmark.Result r = report.results().get(i);
            String name = contenders.get(i).name();
            assertEquals(name, r.contender());
            for (EdgeBenchmark.Tenant t : List.of(r.polite(), r.noisy())) {
                assertTrue(t.sent() > 0, name + ": calls sent\n" + table);
                assertTrue(t.everyCallEnded(), name + ": every call ended once: " + t);
                assertEquals(0, t.failed(), name + ": no call ended with another status: " + t);
            }
            assertTrue(r.noisy().sent() > r.polite().sent(), name + ": the noisy tenant sent more: " + r);
            assertTrue(r.polite().ok() + r.noisy().ok() > 0, name + ": some calls answered\n" + table);
            assertTrue(r.permitsBack(), name + ": every permit back after the drain");
            assertEquals(0, r.leftInService(), name + ": the server finished its work");
            assertTrue(r.inFlight().length > 0, name + ": the in-flight count was sampled");
            if (name.equals(EdgeContenders.NO_LIMIT)) {
                assertEquals(0, r.polite().shed() + r.noisy().shed(), "nothing sheds without a limit");
                assertEquals(0, r.limit().length, "no limit to report");
            } else {
                assertEquals(r.inFlight().length, r.limit().length, name + ": the limit was sampled");
            }
            assertTrue(table.contains("| " + name + " |"), table);
        }
        Path out = Path.of("target", "edge-smoke");
        EdgeBenchmark.write(out, report);
        String md = Files.readString(out.resolve("edge.md"));
        assertTrue(md.startsWith("# Admission at the edge"), md);
        assertTrue(md.contains(EdgeBenchmark.TABLE_HEADER), md);
        assertTrue(md.contains("concurrency-limits-grpc"), md);
        assertTrue(md.contains("Load of other processes"), md);
        assertTrue(Files.size(out.resolve("edge.png")) > 10_000);
    }
}
