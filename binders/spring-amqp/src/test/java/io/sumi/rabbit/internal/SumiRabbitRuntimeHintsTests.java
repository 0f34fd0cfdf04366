package io.sumi.rabbit.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.amqp.rabbit.config.AbstractRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.config.AbstractRetryOperationsInterceptorFactoryBean;
import org.springframework.amqp.rabbit.config.StatelessRetryOperationsInterceptor;
import org.springframework.amqp.rabbit.config.StatelessRetryOperationsInterceptorFactoryBean;
import org.springframework.amqp.rabbit.listener.ObservableListenerContainer;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.core.io.support.SpringFactoriesLoader;
import org.springframework.util.ReflectionUtils;

class SumiRabbitRuntimeHintsTests {

    /** The hints as an AOT build collects them: every registrar listed in aot.factories. */
    private final RuntimeHints hints = registeredHints();

    @Test
    void registrarIsListedInAotFactories() {
        assertThat(SpringFactoriesLoader.forResourceLocation("META-INF/spring/aot.factories")
                        .load(RuntimeHintsRegistrar.class))
                .hasAtLeastOneElementOfType(SumiRabbitRuntimeHints.class);
    }

    @Test
    void everyMemberTheBinderReadsIsRegistered() {
        assertThat(RuntimeHintsPredicates.reflection()
                        .onFieldAccess(AbstractRabbitListenerContainerFactory.class, "containerCustomizer"))
                .accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection()
                        .onMethodInvocation(ObservableListenerContainer.class, "getApplicationContext"))
                .accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection()
                        .onFieldAccess(StatelessRetryOperationsInterceptor.class, "recoverer"))
                .accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection()
                        .onFieldAccess(AbstractRetryOperationsInterceptorFactoryBean.class, "messageRecoverer"))
                .accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection()
                        .onMethodInvocation(ReflectionUtils.findMethod(
                                StatelessRetryOperationsInterceptorFactoryBean.class,
                                "recover",
                                Object[].class,
                                Throwable.class)))
                .accepts(hints);
    }

    private static RuntimeHints registeredHints() {
        RuntimeHints hints = new RuntimeHints();
        ClassLoader classLoader = SumiRabbitRuntimeHintsTests.class.getClassLoader();
        SpringFactoriesLoader.forResourceLocation("META-INF/spring/aot.factories")
                .load(RuntimeHintsRegistrar.class)
                .forEach(registrar -> registrar.registerHints(hints, classLoader));
        return hints;
    }
}
