// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

// tag::servlet-register[]
import dev.handoff.edge.AdmissionControl;
import dev.handoff.servlet.AdmissionFilter;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.FilterRegistration;
import jakarta.servlet.ServletContext;
import jakarta.servlet.http.HttpServletRequest;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Objects;
// end::servlet-register[]
import dev.handoff.adaptive.Outcome;

/** The examples of docs/integrations/servlet.md. */
final class ServletFilter {

    private ServletFilter() {}

    // tag::servlet-register[]
    // In a ServletContainerInitializer or a ServletContextListener: any Servlet 6 container.
    static AdmissionControl<HttpServletRequest> register(ServletContext context) {
        AdmissionControl<HttpServletRequest> gate = AdmissionControl.<HttpServletRequest>builder()
                .capacity(64)                                   // requests in flight
                .key(request -> Objects.requireNonNullElse(
                        request.getHeader("X-Tenant"), "anonymous"), // fair across tenants
                        tenant -> 1)
                .maxWait(Duration.ofMillis(500))                // then 503 with Retry-After
                .maxQueueLength(256)
                .build();
        FilterRegistration.Dynamic admission =
                context.addFilter("admission", new AdmissionFilter(gate));
        admission.setAsyncSupported(true);                      // waits hold no thread
        admission.addMappingForUrlPatterns(                     // first; REQUEST and ASYNC
                EnumSet.of(DispatcherType.REQUEST, DispatcherType.ASYNC), false, "/*");
        return gate;
    }
    // end::servlet-register[]

    static AdmissionFilter withOptions(AdmissionControl<HttpServletRequest> gate) {
        // tag::servlet-options[]
        AdmissionFilter filter = AdmissionFilter.builder(gate)
                .shedStatus(429)                          // Too Many Requests: a per-tenant limit
                .shedReasonHeader("X-Shed-Reason")        // QUEUE_FULL, TIMED_OUT, COST_TOO_HIGH, CLOSED
                .outcomes(status -> status >= 500 ? Outcome.DROPPED : Outcome.SUCCESS)
                .build();
        // end::servlet-options[]
        return filter;
    }
}
