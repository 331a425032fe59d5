// SPDX-License-Identifier: Apache-2.0
package dev.handoff.edge;

/**
 * Why {@link AdmissionControl} shed a request: its handler did not run and it holds no permits.
 * Each reason is counted ({@link AdmissionControl#shedCount(ShedReason)}); an adapter answers
 * every one the same way (HTTP 503 with {@code Retry-After}, gRPC {@code RESOURCE_EXHAUSTED}) and
 * may tell them apart in a log or a metric tag.
 */
public enum ShedReason {
    /**
     * No room: the queue bound of the limit (its {@code maxQueueLength}, {@code maxQueuedPermits}
     * or {@code maxQueuedPermitsPerKey}) refused the wait, or the request could not be admitted at
     * once and may not wait ({@link AdmissionControl#tryAdmit}, or a {@code maxWait} of zero).
     */
    QUEUE_FULL,
    /** The request waited {@code maxWait} without being admitted; its wait was withdrawn. */
    TIMED_OUT,
    /**
     * The request's cost is more than the limit can grant: above its capacity (for an adaptive
     * capacity, above its present capacity) or above the per-key cap.
     */
    COST_TOO_HIGH,
    /** The limit is closed: the service is shutting down. */
    CLOSED
}
