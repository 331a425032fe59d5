// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

// tag::grpc-setup[]
import dev.handoff.edge.AdmissionControl;
import dev.handoff.grpc.AdmissionInterceptor;
import dev.handoff.grpc.GrpcRequest;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.io.IOException;
import java.time.Duration;
import java.util.Objects;
// end::grpc-setup[]
// tag::grpc-options[]
import dev.handoff.adaptive.Outcome;
import io.grpc.Status;
import java.util.concurrent.Executor;
// end::grpc-options[]
import io.grpc.ServerServiceDefinition;

/** The examples of docs/integrations/grpc.md, over a stand-in service. */
final class GrpcAdmission {

    private final ServerServiceDefinition reports;

    GrpcAdmission(ServerServiceDefinition reports) {
        this.reports = reports;
    }

    // tag::grpc-setup[]
    final AdmissionControl<GrpcRequest> gate = AdmissionControl.<GrpcRequest>builder()
            .capacity(32)                                       // permits in flight
            .key(r -> Objects.requireNonNullElse(r.header("x-tenant"), "anonymous"),
                    tenant -> 1)                                // fair across tenants
            .cost(r -> r.method().getFullMethodName().equals("reports.Reports/Export")
                    ? 8 : 1)                                    // an export weighs 8
            .maxWait(Duration.ofMillis(200))                    // then RESOURCE_EXHAUSTED
            .build();

    Server start(int port) throws IOException {
        return NettyServerBuilder.forPort(port)
                .addService(ServerInterceptors.intercept(reports, AdmissionInterceptor.of(gate)))
                .build()
                .start();
    }
    // end::grpc-setup[]

    // tag::grpc-options[]
    AdmissionInterceptor interceptor(Executor serverExecutor) {
        return AdmissionInterceptor.builder(gate)
                .shedStatus(Status.Code.UNAVAILABLE)            // clients with a retry policy retry
                .outcome(s -> s.getCode() == Status.Code.RESOURCE_EXHAUSTED
                        ? Outcome.DROPPED                       // a limit downstream said no
                        : AdmissionInterceptor.defaultOutcome(s))
                .executor(serverExecutor)                       // where calls that waited start
                .build();
    }
    // end::grpc-options[]
}
