package io.sumi.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.core.io.support.SpringFactoriesLoader;
import reactor.core.publisher.Mono;

class SumiConsumerRuntimeHintsTests {

    @Test
    void registrarIsListedInAotFactories() {
        assertThat(SpringFactoriesLoader.forResourceLocation("META-INF/spring/aot.factories")
                        .load(RuntimeHintsRegistrar.class))
                .hasAtLeastOneElementOfType(SumiConsumerRuntimeHints.class);
    }

    @Test
    void monoFromFutureIsRegisteredWhenReactorIsPresent() throws NoSuchMethodException {
        RuntimeHints hints = new RuntimeHints();
        SpringFactoriesLoader.forResourceLocation("META-INF/spring/aot.factories")
                .load(RuntimeHintsRegistrar.class)
                .forEach(registrar -> registrar.registerHints(hints, getClass().getClassLoader()));
        assertThat(SumiConsumerRuntimeHints.MONO).isEqualTo(Mono.class.getName());
        assertThat(RuntimeHintsPredicates.reflection()
                        .onMethodInvocation(Mono.class.getMethod("fromFuture", CompletableFuture.class)))
                .accepts(hints);
    }
}
