package io.sumi.jms.internal;

import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.aot.hint.ExecutableMode;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.jms.listener.AbstractPollingMessageListenerContainer;

/**
 * The Spring JMS member the JMS binder calls by reflection, for an AOT-processed application (a
 * native image calls only what is registered). Registered in {@code META-INF/spring/aot.factories}.
 */
public final class SumiJmsRuntimeHints implements RuntimeHintsRegistrar {

    @Override
    public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
        // SumiJmsMessageListener: the container's (protected) transaction manager.
        hints.reflection()
                .registerType(
                        AbstractPollingMessageListenerContainer.class,
                        type -> type.withMethod("getTransactionManager", List.of(), ExecutableMode.INVOKE));
    }
}
