package io.sumi.rabbit.internal;

import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.rabbit.config.AbstractRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.config.AbstractRetryOperationsInterceptorFactoryBean;
import org.springframework.amqp.rabbit.config.StatelessRetryOperationsInterceptor;
import org.springframework.amqp.rabbit.config.StatelessRetryOperationsInterceptorFactoryBean;
import org.springframework.amqp.rabbit.listener.ObservableListenerContainer;
import org.springframework.aot.hint.ExecutableMode;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.TypeReference;

/**
 * The Spring AMQP members the Rabbit binder reads by reflection, for an AOT-processed application
 * (a native image reads only what is registered). Registered in {@code META-INF/spring/aot.factories};
 * each entry names the class that reads it.
 *
 * <p>Not covered: {@link BatchRecoveryCheck} also reads the captured field of the
 * {@code factoryBean::recover} method reference inside the retry interceptor. That is a lambda
 * class generated at run time, which no hint can name; in a native image (untested) the check
 * presumably cannot see the factory bean and refuses the retry advice as a recoverer it cannot read.
 */
public final class SumiRabbitRuntimeHints implements RuntimeHintsRegistrar {

    @Override
    public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
        // SumiRabbitListenerContainerFactoryPostProcessor: the factory's container customizer.
        hints.reflection()
                .registerType(
                        AbstractRabbitListenerContainerFactory.class, type -> type.withField("containerCustomizer"));
        // DeadLetterTargets: the container's (protected) application context.
        hints.reflection()
                .registerType(
                        ObservableListenerContainer.class,
                        type -> type.withMethod("getApplicationContext", List.of(), ExecutableMode.INVOKE));
        // BatchRecoveryCheck: the retry interceptor's recoverer and the factory bean's message recoverer,
        // and whether the factory bean overrides recover(Object[], Throwable).
        hints.reflection().registerType(StatelessRetryOperationsInterceptor.class, type -> type.withField("recoverer"));
        hints.reflection()
                .registerType(
                        AbstractRetryOperationsInterceptorFactoryBean.class,
                        type -> type.withField("messageRecoverer"));
        hints.reflection()
                .registerType(
                        StatelessRetryOperationsInterceptorFactoryBean.class,
                        type -> type.withMethod(
                                "recover",
                                List.of(TypeReference.of(Object[].class), TypeReference.of(Throwable.class)),
                                ExecutableMode.INVOKE));
    }
}
