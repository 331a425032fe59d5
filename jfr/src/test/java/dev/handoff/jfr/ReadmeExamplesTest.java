// SPDX-License-Identifier: Apache-2.0
package dev.handoff.jfr;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.Semaphore;
import java.io.IOException;
import java.io.StringReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import jdk.jfr.Configuration;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import jdk.jfr.consumer.RecordingStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The README's JFR example ("Observability"), the same code, streamed with a
 * {@link RecordingStream}: success after a wait, failure after the grant (the write throws), failure
 * of the acquisition (timed out); a short wait stays under the threshold. And the {@code .jfc}
 * snippet of {@link WaitThreshold}'s Javadoc, loaded as a configuration.
 */
@Timeout(120) // a hang fails the test instead of holding the build
class ReadmeExamplesTest {

    record Part(String name, long size) {}

    interface Storage {
        void write(Part part) throws IOException;
    }

    record Alert(String semaphore, String outcome, long permits, Duration waited) {}

    final BlockingQueue<Alert> alerts = new LinkedBlockingQueue<>();
    Storage storage = part -> {};

    void alert(String semaphore, String outcome, long permits, Duration waited) {
        alerts.add(new Alert(semaphore, outcome, permits, waited));
    }

    // ---- the README's code, as it stands there --------------------------------------------------

    Semaphore uploads() {
        Semaphore uploads = Semaphore.builder(64L << 20)
                .name("uploads") // the events' semaphore field
                .listener(new JfrWaitListener()) // with metrics: WaitListener.all(metrics, jfr)
                .build();
        return uploads;
    }

    void watch(Runnable application) {
        try (RecordingStream stream = new RecordingStream()) {
            stream.enable("dev.handoff.SemaphoreWait").with("waitThreshold", "5 ms");
            stream.onEvent(
                    "dev.handoff.SemaphoreWait",
                    event -> alert(
                            event.getString("semaphore"),
                            event.getString("outcome"),
                            event.getLong("permits"),
                            event.getDuration("waitTime")));
            stream.startAsync();
            application.run();
        }
    }

    boolean store(Semaphore uploads, Part part) throws IOException, InterruptedException {
        if (!uploads.tryAcquireBlocking(part.size(), Duration.ofSeconds(2))) {
            return false;
        }
        try {
            storage.write(part);
        } finally {
            uploads.release(part.size());
        }
        return true;
    }

    // ---- the runs ---------------------------------------------------------------------------------

    private static final long MIB = 1L << 20;

    /** Its own threads: the common pool has one worker on a 2-core machine. */
    private final ExecutorService pool = Executors.newCachedThreadPool();

    @AfterEach
    void stopPool() {
        pool.shutdownNow();
    }

    private Alert next() throws InterruptedException {
        Alert a = alerts.poll(20, TimeUnit.SECONDS); // the stream flushes about once a second
        assertNotNull(a, "no event streamed");
        return a;
    }

    /** Holds all 64 MiB while {@code part} is stored on another thread, for {@code holdMillis} after it queued. */
    private Object storeBehind(Semaphore uploads, Part part, long holdMillis) throws Exception {
        assertTrue(uploads.tryAcquire(64 * MIB));
        CompletableFuture<Object> stored = CompletableFuture.supplyAsync(
                () -> {
                    try {
                        return store(uploads, part);
                    } catch (IOException e) {
                        return e;
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                },
                pool);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (uploads.queueLength() == 0) {
            assertTrue(System.nanoTime() < deadline, "nothing queued within 10 s");
            Thread.sleep(1);
        }
        TimeUnit.MILLISECONDS.sleep(holdMillis);
        uploads.release(64 * MIB);
        return stored.get(10, TimeUnit.SECONDS);
    }

    @Test
    void successFailureAfterTheGrantAndFailureOfTheAcquisition() throws Exception {
        Semaphore uploads = uploads();
        List<Object> results = new ArrayList<>();
        watch(() -> {
            try {
                assertTrue(uploads.tryAcquire(64 * MIB));
                assertTrue(uploads.acquireAsync(MIB).cancel(false)); // under 5 ms: no event
                uploads.release(64 * MIB);
                results.add(storeBehind(uploads, new Part("slow", 2 * MIB), 50)); // success after a wait
                Alert slow = next();
                assertEquals(new Alert("uploads", "granted", 2 * MIB, slow.waited()), slow);
                assertTrue(slow.waited().toMillis() >= 40, slow.toString());

                storage = part -> {
                    throw new IOException("disk full");
                };
                Object failed = storeBehind(uploads, new Part("failing", 3 * MIB), 50);
                assertEquals("disk full", ((IOException) failed).getMessage());
                Alert granted = next();
                assertEquals("granted", granted.outcome(), "it waited and was granted; the write failed after");
                assertEquals(3 * MIB, granted.permits());

                assertTrue(uploads.tryAcquire(64 * MIB));
                results.add(store(uploads, new Part("late", 4 * MIB))); // times out after 2 s
                Alert late = next();
                assertEquals("timed_out", late.outcome());
                assertEquals(4 * MIB, late.permits());
                uploads.release(64 * MIB);
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        });
        assertEquals(List.of(true, false), results);
        assertEquals(List.of(), List.copyOf(alerts), "the short wait made no event");
        assertEquals(64 * MIB, uploads.availablePermits());
    }

    /** {@link WaitThreshold}'s {@code .jfc} snippet, inside a configuration file. */
    @Test
    void theJfcSnippetConfiguresTheThreshold() throws Exception {
        String jfc = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                + "<configuration version=\"2.0\" label=\"handoff\">\n"
                + "<event name=\"dev.handoff.SemaphoreWait\">\n"
                + "  <setting name=\"enabled\">true</setting>\n"
                + "  <setting name=\"waitThreshold\">50 ms</setting>\n"
                + "</event>\n"
                + "</configuration>\n";
        Configuration configuration = Configuration.create(new StringReader(jfc));
        assertEquals("50 ms", configuration.getSettings().get("dev.handoff.SemaphoreWait#waitThreshold"));
        Semaphore s = Semaphore.builder(1).listener(new JfrWaitListener("jfc")).build();
        assertTrue(s.tryAcquire(1));
        Path file = Files.createTempFile("handoff-jfc", ".jfr");
        try (Recording recording = new Recording(configuration)) {
            recording.start();
            // 50 ms, not the snippet's 5: a preempted test thread must not turn the short wait into a long one
            assertTrue(s.acquireAsync(1).cancel(false)); // about 0 ms: filtered
            assertFalse(s.tryAcquireBlocking(1, Duration.ofMillis(150))); // 150 ms: recorded
            recording.stop();
            recording.dump(file);
            List<String> outcomes = new ArrayList<>();
            for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
                if (e.getEventType().getName().equals("dev.handoff.SemaphoreWait")
                        && "jfc".equals(e.getString("semaphore"))) {
                    outcomes.add(e.getString("outcome"));
                }
            }
            assertEquals(List.of("timed_out"), outcomes);
        } finally {
            Files.deleteIfExists(file);
        }
    }
}
