package io.sumi.jms.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.core.io.support.SpringFactoriesLoader;
import org.springframework.jms.listener.AbstractPollingMessageListenerContainer;

class SumiJmsRuntimeHintsTests {

    @Test
    void registrarIsListedInAotFactories() {
        assertThat(SpringFactoriesLoader.forResourceLocation("META-INF/spring/aot.factories")
                        .load(RuntimeHintsRegistrar.class))
                .hasAtLeastOneElementOfType(SumiJmsRuntimeHints.class);
    }

    @Test
    void theProtectedTransactionManagerGetterIsRegistered() {
        RuntimeHints hints = new RuntimeHints();
        SpringFactoriesLoader.forResourceLocation("META-INF/spring/aot.factories")
                .load(RuntimeHintsRegistrar.class)
                .forEach(registrar -> registrar.registerHints(hints, getClass().getClassLoader()));
        assertThat(RuntimeHintsPredicates.reflection()
                        .onMethodInvocation(AbstractPollingMessageListenerContainer.class, "getTransactionManager"))
                .accepts(hints);
    }
}
