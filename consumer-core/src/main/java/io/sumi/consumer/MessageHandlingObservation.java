package io.sumi.consumer;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.sumi.consumer.OutcomeRecorder.Outcome;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * One handled message (or batch) as a Micrometer {@link Observation} named {@value #NAME}, with
 * the low-cardinality tags {@code consumer}, {@code mode} ({@code lease}, {@code transactional})
 * and {@code outcome} (the {@code sumi.messages} outcome: {@code processed}, {@code duplicate},
 * {@code busy}, {@code failed}, {@code rejected}, {@code reconcile}). With a tracer bridge it is a
 * span, a child of the listener container's consumer span, whose handler spans are its children;
 * so a trace shows a duplicate or a busy retry for what it is. With the NOOP registry it costs
 * nothing.
 */
final class MessageHandlingObservation {

    static final String NAME = "sumi.message.handling";

    private final Observation observation;

    private MessageHandlingObservation(Observation observation) {
        this.observation = observation;
    }

    static MessageHandlingObservation start(ObservationRegistry registry, String consumer, IdempotencyMode mode) {
        Observation observation = Observation.createNotStarted(NAME, registry)
                .contextualName("sumi " + consumer)
                .lowCardinalityKeyValue("consumer", consumer)
                .lowCardinalityKeyValue("mode", mode.name().toLowerCase(Locale.ROOT));
        return new MessageHandlingObservation(observation.start());
    }

    Observation.Scope openScope() {
        return observation.openScope();
    }

    void stop(Outcome outcome, @Nullable Throwable failure) {
        observation.lowCardinalityKeyValue("outcome", outcome.tag);
        if (failure != null) {
            observation.error(failure);
        }
        observation.stop();
    }
}
