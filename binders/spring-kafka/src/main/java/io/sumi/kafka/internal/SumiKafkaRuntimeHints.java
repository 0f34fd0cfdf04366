package io.sumi.kafka.internal;

import org.jspecify.annotations.Nullable;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.TypeReference;
import org.springframework.kafka.config.ShareKafkaListenerContainerFactory;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.FailedRecordProcessor;
import org.springframework.kafka.listener.adapter.HandlerAdapter;
import org.springframework.kafka.listener.adapter.MessagingMessageListenerAdapter;

/**
 * The private Spring Kafka fields the Kafka binder reads by reflection, for an AOT-processed
 * application (a native image reads only what is registered). Registered in
 * {@code META-INF/spring/aot.factories}; each entry names the class that reads it.
 */
public final class SumiKafkaRuntimeHints implements RuntimeHintsRegistrar {

    /** Package-private in Spring Kafka: named, not imported. */
    static final String FAILED_RECORD_TRACKER = "org.springframework.kafka.listener.FailedRecordTracker";

    @Override
    public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
        // PollClaimContainerCheck: the container's consumer factory (its max.poll.records).
        hints.reflection()
                .registerType(AbstractMessageListenerContainer.class, type -> type.withField("consumerFactory"));
        // SumiKafkaErrorHandling: the error handler's failure tracker and its noRetries flag.
        hints.reflection().registerType(FailedRecordProcessor.class, type -> type.withField("failureTracker"));
        hints.reflection().registerType(TypeReference.of(FAILED_RECORD_TRACKER), type -> type.withField("noRetries"));
        // SumiErrorHandlerConfigurer, AsyncRecordListenerCheck: the listener method behind an adapter.
        hints.reflection().registerType(MessagingMessageListenerAdapter.class, type -> type.withField("handlerMethod"));
        hints.reflection().registerType(HandlerAdapter.class, type -> type.withField("invokerHandlerMethod"));
        // ShareFactoryPhase: a share factory's phase, which has no getter.
        hints.reflection().registerType(ShareKafkaListenerContainerFactory.class, type -> type.withField("phase"));
    }
}
