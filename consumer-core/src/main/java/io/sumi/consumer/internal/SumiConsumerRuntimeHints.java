package io.sumi.consumer.internal;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;
import org.springframework.aot.hint.ExecutableMode;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.TypeReference;

/**
 * What the consumer core calls by reflection, for an AOT-processed application (a native image
 * calls only what is registered). Registered in {@code META-INF/spring/aot.factories}.
 */
public final class SumiConsumerRuntimeHints implements RuntimeHintsRegistrar {

    /** Reactor is optional: ListenerReturnTypes loads Mono by name and calls Mono.fromFuture reflectively. */
    static final String MONO = "reactor.core.publisher.Mono";

    @Override
    public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
        hints.reflection()
                .registerTypeIfPresent(
                        classLoader,
                        MONO,
                        type -> type.withMethod(
                                "fromFuture",
                                List.of(TypeReference.of(CompletableFuture.class)),
                                ExecutableMode.INVOKE));
    }
}
