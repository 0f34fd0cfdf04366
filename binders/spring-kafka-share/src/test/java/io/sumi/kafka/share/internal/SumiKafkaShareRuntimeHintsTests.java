package io.sumi.kafka.share.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Method;
import org.junit.jupiter.api.Test;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.core.io.support.SpringFactoriesLoader;
import org.springframework.kafka.listener.AbstractShareKafkaMessageListenerContainer;
import org.springframework.util.ReflectionUtils;

class SumiKafkaShareRuntimeHintsTests {

    /** The hints as an AOT build collects them: every registrar listed in aot.factories. */
    private final RuntimeHints hints = registeredHints();

    @Test
    void registrarIsListedInAotFactories() {
        assertThat(SpringFactoriesLoader.forResourceLocation("META-INF/spring/aot.factories")
                        .load(RuntimeHintsRegistrar.class))
                .hasAtLeastOneElementOfType(SumiKafkaShareRuntimeHints.class);
    }

    @Test
    void whatTheBinderReadsByReflectionIsRegistered() {
        // The members exist under these names in the Spring Kafka on the class path: a rename
        // there fails here, not in a native image.
        Method recoverer = ReflectionUtils.findMethod(
                AbstractShareKafkaMessageListenerContainer.class, "getShareConsumerRecordRecoverer");
        assertThat(recoverer).isNotNull();
        assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(recoverer))
                .accepts(hints);
    }

    private static RuntimeHints registeredHints() {
        RuntimeHints hints = new RuntimeHints();
        ClassLoader classLoader = SumiKafkaShareRuntimeHintsTests.class.getClassLoader();
        SpringFactoriesLoader.forResourceLocation("META-INF/spring/aot.factories")
                .load(RuntimeHintsRegistrar.class)
                .forEach(registrar -> registrar.registerHints(hints, classLoader));
        return hints;
    }
}
