package io.sumi.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.core.io.support.SpringFactoriesLoader;
import org.springframework.kafka.config.ShareKafkaListenerContainerFactory;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.FailedRecordProcessor;
import org.springframework.kafka.listener.adapter.HandlerAdapter;
import org.springframework.kafka.listener.adapter.MessagingMessageListenerAdapter;

class SumiKafkaRuntimeHintsTests {

    /** The hints as an AOT build collects them: every registrar listed in aot.factories. */
    private final RuntimeHints hints = registeredHints();

    @Test
    void registrarIsListedInAotFactories() {
        assertThat(SpringFactoriesLoader.forResourceLocation("META-INF/spring/aot.factories")
                        .load(RuntimeHintsRegistrar.class))
                .hasAtLeastOneElementOfType(SumiKafkaRuntimeHints.class);
    }

    @Test
    void everyPrivateFieldTheBinderReadsIsRegistered() throws ClassNotFoundException {
        assertThat(RuntimeHintsPredicates.reflection()
                        .onFieldAccess(AbstractMessageListenerContainer.class, "consumerFactory"))
                .accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection().onFieldAccess(FailedRecordProcessor.class, "failureTracker"))
                .accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection()
                        .onFieldAccess(SumiKafkaRuntimeHints.FAILED_RECORD_TRACKER, "noRetries"))
                .accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection()
                        .onFieldAccess(MessagingMessageListenerAdapter.class, "handlerMethod"))
                .accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection().onFieldAccess(HandlerAdapter.class, "invokerHandlerMethod"))
                .accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection().onFieldAccess(ShareKafkaListenerContainerFactory.class, "phase"))
                .accepts(hints);
    }

    private static RuntimeHints registeredHints() {
        RuntimeHints hints = new RuntimeHints();
        ClassLoader classLoader = SumiKafkaRuntimeHintsTests.class.getClassLoader();
        SpringFactoriesLoader.forResourceLocation("META-INF/spring/aot.factories")
                .load(RuntimeHintsRegistrar.class)
                .forEach(registrar -> registrar.registerHints(hints, classLoader));
        return hints;
    }
}
