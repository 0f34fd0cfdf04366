package io.sumi.kafka.share.internal;

import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.aot.hint.ExecutableMode;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.kafka.listener.AbstractShareKafkaMessageListenerContainer;

/**
 * What the share-group binder reads of Spring Kafka by reflection, for an AOT-processed
 * application (a native image reads only what is registered). Registered in
 * {@code META-INF/spring/aot.factories}; each entry names the class that reads it.
 *
 * @since 0.1.0
 */
public final class SumiKafkaShareRuntimeHints implements RuntimeHintsRegistrar {

    @Override
    public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
        // ShareListenerConfigurer: the container's recoverer, behind a protected getter.
        hints.reflection()
                .registerType(
                        AbstractShareKafkaMessageListenerContainer.class,
                        type -> type.withMethod("getShareConsumerRecordRecoverer", List.of(), ExecutableMode.INVOKE));
    }
}
