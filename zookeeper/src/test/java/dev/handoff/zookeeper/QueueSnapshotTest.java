// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The grant rule on hand-made snapshots, without a server: ordering across generations, seals, fail-closed. */
class QueueSnapshotTest {

    private static String request(long weight, long sequence) {
        return Request.nodeName(weight) + String.format("%010d", sequence);
    }

    private static QueueSnapshot.Generation generation(long number, String... children) {
        return new QueueSnapshot.Generation(number, List.of(children));
    }

    private static QueueSnapshot of(long capacity, QueueSnapshot.Generation... generations) {
        return QueueSnapshot.of(List.of(generations), capacity, ZooKeeperSemaphore.SWITCH_AT_SEQUENCE);
    }

    @Test
    void grantsThePrefixThatFitsInSequenceOrder() {
        QueueSnapshot s = of(4, generation(0, request(1, 7), request(2, 3), request(2, 5)));
        assertEquals(List.of(3L, 5L, 7L), s.order.stream().map(e -> e.sequence).toList());
        assertTrue(s.byName.get(request(2, 3)).granted);
        assertTrue(s.byName.get(request(2, 5)).granted);
        assertFalse(s.byName.get(request(1, 7)).granted, "2 + 2 + 1 > 4, and it may not barge");
        assertFalse(s.newestNeedsSwitch);
    }

    @Test
    void aSealedGenerationComesFirstAndWhatCameAfterItsSealIsVoid() {
        QueueSnapshot s = of(
                3,
                generation(0, request(2, 999_999_998), "seal-1000000001", request(1, 1_000_000_002)),
                generation(1, request(1, 0), request(1, 1)));
        assertEquals(
                List.of(999_999_998L, 0L, 1L),
                s.order.stream().map(e -> e.sequence).toList());
        assertTrue(s.misplaced.contains(request(1, 1_000_000_002)), "created after the seal: asks again");
        assertTrue(s.byName.get(request(1, 0)).granted);
        assertFalse(s.byName.get(request(1, 1)).granted, "2 + 1 + 1 > 3");
        assertTrue(s.poison.isEmpty());
        assertFalse(s.newestNeedsSwitch);
    }

    @Test
    void theNewestGenerationIsSealedOnceItsCounterPassesTheSwitchPoint() {
        assertTrue(of(3, generation(0, request(1, ZooKeeperSemaphore.SWITCH_AT_SEQUENCE))).newestNeedsSwitch);
        assertFalse(of(3, generation(0, request(1, ZooKeeperSemaphore.SWITCH_AT_SEQUENCE - 1))).newestNeedsSwitch);
        QueueSnapshot drained = of(3, generation(0, "seal-0000000004"), generation(1, request(1, 0)));
        assertEquals(List.of(0L), drained.drained, "only seals left: to delete");
    }

    @Test
    void duplicateNegativeOrUnparsableSequencesBlockEveryLaterGrant() {
        String a = "_c_a-" + request(1, Integer.MAX_VALUE);
        String b = "_c_b-" + request(1, Integer.MAX_VALUE);
        String wrapped = Request.nodeName(1) + "-2147483648";
        QueueSnapshot s = of(10, generation(0, request(1, 1), a, b, wrapped), generation(1, request(1, 0)));
        assertEquals(3, s.poison.size(), s.poison.toString());
        assertTrue(s.misplaced.containsAll(List.of(a, b, wrapped)), "their owners ask again");
        assertTrue(s.byName.get(request(1, 1)).blocked, "fail closed: even the first request waits");
        assertTrue(s.byName.get(request(1, 0)).blocked, "and every later generation");
        assertTrue(s.order.stream().noneMatch(e -> e.granted));
        assertTrue(s.newestNeedsSwitch || s.newestSealed || s.newest == 1);
        assertNull(QueueSnapshot.parseRequest(wrapped));
        assertNull(QueueSnapshot.parseRequest(Request.nodeName(1) + "00000000x1"));
    }

    @Test
    void aSealSharingARequestsSequenceBlocksWhileThatRequestIsThere() {
        QueueSnapshot held =
                of(5, generation(0, request(1, Integer.MAX_VALUE), "seal-2147483647"), generation(1, request(1, 0)));
        assertTrue(held.byName.get(request(1, 0)).blocked);
        QueueSnapshot released = of(5, generation(0, "seal-2147483647"), generation(1, request(1, 0)));
        assertTrue(released.byName.get(request(1, 0)).granted, "only the seal left: nothing to order");
        assertEquals(List.of(0L), released.drained);
    }
}
