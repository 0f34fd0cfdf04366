package io.sumi.autoconfigure;

import io.micrometer.tracing.TraceContext;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.propagation.Propagator;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.beans.factory.ObjectProvider;

/**
 * The current trace context as the propagation headers of the application's Micrometer Tracing
 * propagator (W3C {@code traceparent} by default in Spring Boot), for {@code Outbox.append} to
 * store with each row. The tracer and propagator are looked up on first use, so this bean needs no
 * ordering against the tracing auto-configuration. Loaded only when Micrometer Tracing is present.
 *
 * <p>Not a {@code Supplier} bean: Spring Cloud Stream would bind every {@code Supplier} bean as a
 * message source.
 */
final class OutboxTraceContext {

    private final ObjectProvider<Tracer> tracer;
    private final ObjectProvider<Propagator> propagator;

    OutboxTraceContext(ObjectProvider<Tracer> tracer, ObjectProvider<Propagator> propagator) {
        this.tracer = tracer;
        this.propagator = propagator;
    }

    /** The propagation headers of the current span, or none outside a span. */
    Map<String, String> headers() {
        Tracer current = tracer.getIfUnique();
        Propagator headers = propagator.getIfUnique();
        if (current == null || headers == null) {
            return Map.of();
        }
        TraceContext context = current.currentTraceContext().context();
        if (context == null) {
            return Map.of();
        }
        Map<String, String> carrier = new LinkedHashMap<>();
        headers.inject(context, carrier, (target, key, value) -> carrier.put(key, value));
        return carrier;
    }
}
