// SPDX-License-Identifier: Apache-2.0
package dev.handoff.jfr;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.Mutex;
import dev.handoff.Permits;
import dev.handoff.RwLock;
import dev.handoff.Semaphore;
import dev.handoff.WaitListener;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import jdk.jfr.EventType;
import jdk.jfr.FlightRecorder;
import jdk.jfr.Recording;
import jdk.jfr.SettingDescriptor;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Real recordings, dumped and read back: the fields of granted, timed-out and closed waits; the
 * waitThreshold setting (default, set, combined across recordings); a disabled event records
 * nothing.
 */
@Timeout(120) // a hang fails the test instead of holding the build
class JfrWaitListenerTest {

    private static final String EVENT = "dev.handoff.SemaphoreWait";
    private static final AtomicInteger NAMES = new AtomicInteger();

    interface Body {
        void run() throws Exception;
    }

    /** A semaphore name no other test uses, so each test reads only its own events. */
    private static String uniqueName() {
        return "jfr-test-" + NAMES.incrementAndGet();
    }

    /**
     * Runs {@code body} while {@code recordings} record, and returns the events of semaphore
     * {@code name} that the first recording holds.
     */
    private static List<RecordedEvent> record(String name, List<Recording> recordings, Body body) throws Exception {
        return record(name, recordings, body, new ArrayList<>());
    }

    /** As above, and adds every event of the first recording to {@code all}. */
    private static List<RecordedEvent> record(
            String name, List<Recording> recordings, Body body, List<RecordedEvent> all) throws Exception {
        Path file = Files.createTempFile("handoff-jfr-test", ".jfr");
        try {
            for (Recording r : recordings) {
                r.start();
            }
            body.run();
            for (Recording r : recordings) {
                r.stop();
            }
            recordings.get(0).dump(file);
            List<RecordedEvent> mine = new ArrayList<>();
            for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
                all.add(e);
                if (e.getEventType().getName().equals(EVENT) && name.equals(e.getString("semaphore"))) {
                    mine.add(e);
                }
            }
            return mine;
        } finally {
            for (Recording r : recordings) {
                r.close();
            }
            Files.deleteIfExists(file);
        }
    }

    private static Recording recording(String waitThreshold) {
        Recording r = new Recording();
        if (waitThreshold == null) {
            r.enable(EVENT);
        } else {
            r.enable(EVENT).with("waitThreshold", waitThreshold);
        }
        return r;
    }

    private static String summary(RecordedEvent e) {
        return e.getString("outcome") + " " + e.getLong("permits") + " ahead " + e.getInt("waitersAhead");
    }

    /** The examples on the core's {@code Mutex.builder()} and {@code RwLock.builder(int)}. */
    @Test
    void theMutexAndRwLockJavadocExamplesRecordTheirWaits() throws Exception {
        String journalName = uniqueName();
        String cacheName = uniqueName();
        List<RecordedEvent> journalEvents = record(journalName, List.of(recording("0 ms")), () -> {
            Mutex journal = Mutex.builder() // as in Mutex.builder()'s Javadoc
                    .name(journalName)
                    .maxQueueLength(1_000)
                    .listener(new JfrWaitListener(journalName))
                    .build();
            Permits first = journal.lockBlocking();
            CompletableFuture<Permits> next = journal.lockAsync();
            first.release();
            next.get(10, TimeUnit.SECONDS).release();
        });
        List<RecordedEvent> cacheEvents = record(cacheName, List.of(recording("0 ms")), () -> {
            RwLock cache = RwLock.builder(64) // as in RwLock.builder(int)'s Javadoc
                    .name(cacheName)
                    .listener(new JfrWaitListener(cacheName))
                    .build();
            Permits reading = cache.readLockBlocking();
            CompletableFuture<RwLock.WritePermits> writer = cache.writeLockAsync();
            reading.release();
            writer.get(10, TimeUnit.SECONDS).release();
        });
        assertEquals(
                List.of("granted 1 ahead 0"),
                journalEvents.stream().map(JfrWaitListenerTest::summary).toList());
        assertEquals(
                List.of("granted 64 ahead 0"),
                cacheEvents.stream().map(JfrWaitListenerTest::summary).toList());
    }

    // ------------------------------------------------------------------ the name in the event

    /** One cancelled wait: recorded at a 0 ms threshold, whatever the machine's speed. */
    private static void cancelledWait(Semaphore s) {
        assertTrue(s.tryAcquire(1));
        assertTrue(s.acquireAsync(1).cancel(false));
        s.release(1);
    }

    @Test
    void aListenerWithoutANameTakesThePrimitivesName() throws Exception {
        String uploads = uniqueName();
        String journal = uniqueName();
        String index = uniqueName();
        JfrWaitListener forUploads = new JfrWaitListener();
        assertNull(forUploads.semaphoreName());
        assertEquals("JfrWaitListener[unnamed]", forUploads.toString());
        Semaphore s = Semaphore.builder(1).name(uploads).listener(forUploads).build();
        assertEquals(uploads, forUploads.semaphoreName());
        assertEquals("JfrWaitListener[" + uploads + "]", forUploads.toString());
        List<RecordedEvent> uploadEvents = record(uploads, List.of(recording("0 ms")), () -> cancelledWait(s));
        assertEquals(
                List.of("cancelled 1 ahead 0"),
                uploadEvents.stream().map(JfrWaitListenerTest::summary).toList());

        Mutex m = Mutex.builder().name(journal).listener(new JfrWaitListener()).build();
        List<RecordedEvent> journalEvents = record(journal, List.of(recording("0 ms")), () -> {
            assertTrue(m.tryLock());
            assertTrue(m.lockAsync().cancel(false));
            m.unlock();
        });
        assertEquals(
                List.of("cancelled 1 ahead 0"),
                journalEvents.stream().map(JfrWaitListenerTest::summary).toList());

        // through WaitListener.all, which passes the name on to each listener
        JfrWaitListener forIndex = new JfrWaitListener();
        RwLock rw = RwLock.builder(4)
                .name(index)
                .listener(WaitListener.all(new WaitListener() {}, forIndex))
                .build();
        assertEquals(index, forIndex.semaphoreName());
        List<RecordedEvent> indexEvents = record(index, List.of(recording("0 ms")), () -> {
            assertTrue(rw.tryReadLock());
            assertTrue(rw.writeLockAsync().cancel(false));
            rw.readUnlock();
        });
        assertEquals(
                List.of("cancelled 4 ahead 0"),
                indexEvents.stream().map(JfrWaitListenerTest::summary).toList());
    }

    @Test
    void aNameGivenToTheListenerWinsAndMayServeSeveralPrimitives() throws Exception {
        String given = uniqueName();
        JfrWaitListener listener = new JfrWaitListener(given);
        Semaphore a = Semaphore.builder(1).name(uniqueName()).listener(listener).build();
        Semaphore b = Semaphore.builder(1).name(uniqueName()).listener(listener).build();
        assertEquals(given, listener.semaphoreName());
        List<RecordedEvent> events = record(given, List.of(recording("0 ms")), () -> {
            cancelledWait(a);
            cancelledWait(b);
        });
        assertEquals(2, events.size(), events.toString());
    }

    @Test
    void anUnnamedListenerServesOneNameOnly() throws Exception {
        String name = uniqueName();
        JfrWaitListener listener = new JfrWaitListener();
        Semaphore first = Semaphore.builder(1).name(name).listener(listener).build();
        Semaphore sameName = Semaphore.builder(1).name(name).listener(listener).build();
        String other = uniqueName();
        Semaphore.Builder otherName = Semaphore.builder(1).name(other).listener(listener);
        IllegalStateException e = assertThrows(IllegalStateException.class, otherName::build);
        assertEquals(
                "attached(\"" + other + "\"): this JfrWaitListener serves the primitive named \"" + name
                        + "\" already, and its events carry one name; give each primitive its own JfrWaitListener, or name"
                        + " the listener (new JfrWaitListener(\"...\")) to record both under it",
                e.getMessage());
        assertEquals(name, listener.semaphoreName(), "the refused name changed nothing");
        List<RecordedEvent> events = record(name, List.of(recording("0 ms")), () -> {
            cancelledWait(first);
            cancelledWait(sameName);
        });
        assertEquals(2, events.size(), events.toString());
    }

    /** Neither the listener nor the primitive has a name: the events have none, and are still recorded. */
    @Test
    void withoutAnyNameTheEventHasNone() throws Exception {
        JfrWaitListener listener = new JfrWaitListener();
        Semaphore s = Semaphore.builder(1).listener(listener).build();
        assertNull(listener.semaphoreName(), "an unnamed primitive tells no name");
        String marker = uniqueName(); // a named listener beside it, to tell this recording's events apart
        Semaphore named =
                Semaphore.builder(1).listener(new JfrWaitListener(marker)).build();
        List<RecordedEvent> all = new ArrayList<>();
        List<RecordedEvent> markers = record(
                marker,
                List.of(recording("0 ms")),
                () -> {
                    cancelledWait(s);
                    cancelledWait(named);
                },
                all);
        assertEquals(1, markers.size());
        long unnamed = all.stream()
                .filter(e -> e.getEventType().getName().equals(EVENT) && e.getString("semaphore") == null)
                .count();
        assertEquals(1, unnamed, all.toString());
    }

    @Test
    void grantedTimedOutAndClosedWaitsAreRecordedWithTheirFields() throws Exception {
        String name = uniqueName();
        Semaphore s = Semaphore.builder(4).listener(new JfrWaitListener(name)).build();
        List<RecordedEvent> events = record(name, List.of(recording("0 ms")), () -> {
            assertTrue(s.tryAcquire(4));
            CompletableFuture<Permits> granted = s.acquireAsync(3);
            TimeUnit.MILLISECONDS.sleep(30);
            s.release(3);
            granted.get(5, TimeUnit.SECONDS);

            CompletableFuture<Permits> closed = s.acquireAsync(1);
            assertFalse(s.tryAcquireBlocking(2, Duration.ofMillis(25))); // one waiter ahead of it
            s.close();
            assertTrue(closed.isCompletedExceptionally());
        });
        List<String> seen = new ArrayList<>();
        for (RecordedEvent e : events) {
            seen.add(summary(e));
        }
        assertEquals(List.of("granted 3 ahead 0", "timed_out 2 ahead 1", "closed 1 ahead 0"), seen);
        assertTrue(
                events.get(0).getDuration("waitTime").toMillis() >= 30,
                events.get(0).toString());
        assertTrue(
                events.get(1).getDuration("waitTime").toMillis() >= 25,
                events.get(1).toString());
        assertTrue(
                events.get(2).getDuration("waitTime").toMillis() >= 25,
                events.get(2).toString());
        assertEquals(name, events.get(0).getString("semaphore"));
        assertEquals(null, events.get(0).getStackTrace(), "no stack trace: the committing thread is not the waiter");
    }

    @Test
    void theEventTypeIsDescribed() throws Exception {
        String name = uniqueName();
        Semaphore s = Semaphore.builder(1).listener(new JfrWaitListener(name)).build();
        assertTrue(s.tryAcquire(1));
        record(name, List.of(recording("0 ms")), () -> assertFalse(s.tryAcquireBlocking(1, Duration.ofMillis(1))));
        EventType type = null;
        for (EventType t : FlightRecorder.getFlightRecorder().getEventTypes()) {
            if (t.getName().equals(EVENT)) {
                type = t;
            }
        }
        assertNotNull(type, "the event type is registered once used");
        assertEquals("Semaphore Wait", type.getLabel());
        assertEquals(List.of("handoff"), type.getCategoryNames());
        assertNotNull(type.getDescription());
        assertEquals(
                jdk.jfr.Timespan.NANOSECONDS,
                type.getField("waitTime").getAnnotation(jdk.jfr.Timespan.class).value());
        SettingDescriptor threshold = null;
        for (SettingDescriptor d : type.getSettingDescriptors()) {
            if (d.getName().equals("waitThreshold")) {
                threshold = d;
            }
        }
        assertNotNull(threshold, "the waitThreshold setting");
        assertEquals("20 ms", threshold.getDefaultValue());
    }

    /**
     * The short wait is told to the listener as the semaphore tells it, lasting 0 ns: a real one
     * (acquireAsync, then cancel) lasts microseconds, unless a loaded machine deschedules the
     * thread in between for 20 ms or more, and then the default threshold rightly records it. The
     * long wait is a real one, at least 80 ms (and far below 1 s).
     */
    @Test
    void theThresholdFiltersShortWaits() throws Exception {
        String name = uniqueName();
        JfrWaitListener listener = new JfrWaitListener(name);
        Semaphore s = Semaphore.builder(1).listener(listener).build();
        assertTrue(s.tryAcquire(1));
        Body shortAndLong = () -> {
            listener.settled(1, dev.handoff.WaitOutcome.CANCELLED, 0, 0); // a cancelled wait of 0 ns
            assertFalse(s.tryAcquireBlocking(1, Duration.ofMillis(80))); // waits >= 80 ms
        };
        List<RecordedEvent> at50 = record(name, List.of(recording("50 ms")), shortAndLong);
        assertEquals(1, at50.size(), at50.toString());
        assertEquals("timed_out 1 ahead 0", summary(at50.get(0)));

        List<RecordedEvent> atDefault = record(name, List.of(recording(null)), shortAndLong); // 20 ms
        assertEquals(1, atDefault.size(), atDefault.toString());
        assertEquals("timed_out", atDefault.get(0).getString("outcome"));

        List<RecordedEvent> atZero = record(name, List.of(recording("0 ms")), shortAndLong);
        assertEquals(
                List.of("cancelled", "timed_out"),
                List.of(atZero.get(0).getString("outcome"), atZero.get(1).getString("outcome")));

        List<RecordedEvent> above = record(name, List.of(recording("1 s")), shortAndLong);
        assertEquals(0, above.size(), above.toString());
    }

    @Test
    void twoRecordingsTakeTheSmallerThreshold() throws Exception {
        String name = uniqueName();
        Semaphore s = Semaphore.builder(1).listener(new JfrWaitListener(name)).build();
        assertTrue(s.tryAcquire(1));
        List<RecordedEvent> events = record(name, List.of(recording("1 s"), recording("0 ns")), () -> {
            assertTrue(s.acquireAsync(1).cancel(false));
        });
        assertEquals(1, events.size(), "the 0 ns recording's threshold applies to both");
    }

    @Test
    void aDisabledEventRecordsNothing() throws Exception {
        String name = uniqueName();
        Semaphore s = Semaphore.builder(1).listener(new JfrWaitListener(name)).build();
        assertTrue(s.tryAcquire(1));
        Recording disabled = new Recording();
        disabled.enable("jdk.ThreadSleep"); // the recording runs, without our event
        disabled.disable(EVENT);
        List<RecordedEvent> events = record(name, List.of(disabled), () -> {
            assertFalse(s.tryAcquireBlocking(1, Duration.ofMillis(30)));
        });
        assertEquals(0, events.size());

        // and with no recording at all: the waits go on, nothing fails
        assertFalse(s.tryAcquireBlocking(1, Duration.ofMillis(5)));
        s.release(1);
        assertEquals(1, s.availablePermits());
    }

    @Test
    void withoutARecordingNothingIsAllocated() {
        JfrWaitListener listener = new JfrWaitListener(uniqueName());
        com.sun.management.ThreadMXBean threads =
                (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        long thread = Thread.currentThread().getId();
        for (int i = 0; i < 100_000; i++) { // warm up
            listener.settled(1, dev.handoff.WaitOutcome.GRANTED, 50_000_000, 3);
        }
        long before = threads.getThreadAllocatedBytes(thread);
        for (int i = 0; i < 1_000_000; i++) {
            listener.settled(1, dev.handoff.WaitOutcome.GRANTED, 50_000_000, 3);
        }
        long allocated = threads.getThreadAllocatedBytes(thread) - before;
        assertTrue(allocated < 100_000, allocated + " bytes for 10^6 waits without a recording");
    }

    @Test
    void grantsAtOnceRecordNothing() throws Exception {
        String name = uniqueName();
        Semaphore s = Semaphore.builder(2).listener(new JfrWaitListener(name)).build();
        List<RecordedEvent> events = record(name, List.of(recording("0 ms")), () -> {
            assertTrue(s.tryAcquire(1));
            s.acquireAsync(1).get();
            s.release(2);
        });
        assertEquals(0, events.size());
    }

    @Test
    void badNamesAreRefused() {
        assertEquals(
                "new JfrWaitListener(null): the semaphore's name is null",
                assertThrows(NullPointerException.class, () -> new JfrWaitListener(null))
                        .getMessage());
        assertEquals(
                "new JfrWaitListener(\" \"): the semaphore's name must not be blank",
                assertThrows(IllegalArgumentException.class, () -> new JfrWaitListener(" "))
                        .getMessage());
        assertEquals("uploads", new JfrWaitListener("uploads").semaphoreName());
    }

    @Test
    void thresholdValuesAreReadAsJfrWritesThem() {
        assertEquals(0, WaitThreshold.parseNanos("0"));
        assertEquals(0, WaitThreshold.parseNanos("0 ms"));
        assertEquals(20_000_000, WaitThreshold.parseNanos("20 ms"));
        assertEquals(5_000, WaitThreshold.parseNanos("5us"));
        assertEquals(7, WaitThreshold.parseNanos(" 7 ns "));
        assertEquals(2_000_000_000L, WaitThreshold.parseNanos("2 s"));
        assertEquals(60_000_000_000L, WaitThreshold.parseNanos("1 m"));
        assertEquals(TimeUnit.HOURS.toNanos(1), WaitThreshold.parseNanos("1 h"));
        assertEquals(TimeUnit.DAYS.toNanos(1), WaitThreshold.parseNanos("1 d"));
        for (String bad :
                new String[] {null, "", "ms", "5", "-5 ms", "5 parsecs", "1.5 ms", "99999999999999999999 ns"}) {
            assertEquals(-1, WaitThreshold.parseNanos(bad), bad);
        }

        WaitThreshold t = new WaitThreshold();
        assertEquals("20 ms", t.getValue());
        assertFalse(t.accepts(19_999_999));
        assertTrue(t.accepts(20_000_000));
        t.setValue("nonsense");
        assertEquals("20 ms", t.getValue(), "an unreadable value changes nothing");
        t.setValue("0 ms");
        assertTrue(t.accepts(0));
        assertEquals("1 ms", t.combine(Set.of("5 ms", "1 ms", "bad", "2 s")));
        assertEquals("20 ms", t.combine(Set.of()));
        assertEquals("20 ms", t.combine(Set.of("bad")));

        // JDK 17 calls setValue(null) after combine, having lost its result: the result applies.
        assertEquals("3 ms", t.combine(Set.of("3 ms", "9 ms")));
        t.setValue(null);
        assertEquals("3 ms", t.getValue());
    }
}
