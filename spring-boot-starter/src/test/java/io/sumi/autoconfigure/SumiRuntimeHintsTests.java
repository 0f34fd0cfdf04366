package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.mockito.Mockito.mock;

import io.sumi.consumer.IdempotentHandler;
import java.io.IOException;
import java.lang.reflect.Method;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.aot.generate.ClassNameGenerator;
import org.springframework.aot.generate.DefaultGenerationContext;
import org.springframework.aot.generate.InMemoryGeneratedFiles;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.beans.factory.aot.BeanRegistrationAotContribution;
import org.springframework.beans.factory.aot.BeanRegistrationAotProcessor;
import org.springframework.beans.factory.aot.BeanRegistrationCode;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.beans.factory.support.RegisteredBean;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.core.io.Resource;
import org.springframework.core.io.support.PathMatchingResourcePatternResolver;
import org.springframework.core.io.support.SpringFactoriesLoader;
import org.springframework.javapoet.ClassName;

class SumiRuntimeHintsTests {

    private static final SpringFactoriesLoader AOT_FACTORIES =
            SpringFactoriesLoader.forResourceLocation("META-INF/spring/aot.factories");

    @Test
    void registrarAndProcessorAreListedInAotFactories() {
        assertThat(AOT_FACTORIES.load(RuntimeHintsRegistrar.class)).hasAtLeastOneElementOfType(SumiRuntimeHints.class);
        assertThat(AOT_FACTORIES.load(BeanRegistrationAotProcessor.class))
                .hasAtLeastOneElementOfType(IdempotentHandlerAotProcessor.class);
    }

    @Test
    void everyMigrationOnTheClassPathIsARegisteredResource() throws IOException {
        RuntimeHints hints = new RuntimeHints();
        AOT_FACTORIES
                .load(RuntimeHintsRegistrar.class)
                .forEach(registrar -> registrar.registerHints(hints, getClass().getClassLoader()));
        Resource[] migrations = new PathMatchingResourcePatternResolver().getResources("classpath*:db/sumi/**/*.sql");
        assertThat(migrations).hasSizeGreaterThanOrEqualTo(9);
        for (Resource migration : migrations) {
            String url = migration.getURL().toString();
            String location = url.substring(url.lastIndexOf("db/sumi/"));
            assertThat(RuntimeHintsPredicates.resource().forResource(location))
                    .as(location)
                    .accepts(hints);
        }
    }

    @Test
    void idempotentHandlerMethodsOfABeanAreRegisteredForReflection() throws NoSuchMethodException {
        DefaultListableBeanFactory beanFactory = new DefaultListableBeanFactory();
        beanFactory.registerBeanDefinition("listener", new RootBeanDefinition(Listener.class));
        beanFactory.registerBeanDefinition("other", new RootBeanDefinition(String.class));
        IdempotentHandlerAotProcessor processor = new IdempotentHandlerAotProcessor();

        assertThat(processor.processAheadOfTime(RegisteredBean.of(beanFactory, "other")))
                .isNull();
        BeanRegistrationAotContribution contribution =
                processor.processAheadOfTime(RegisteredBean.of(beanFactory, "listener"));
        assertThat(contribution).isNotNull();
        DefaultGenerationContext generationContext = new DefaultGenerationContext(
                new ClassNameGenerator(ClassName.get(SumiRuntimeHintsTests.class)), new InMemoryGeneratedFiles());
        contribution.applyTo(generationContext, mock(BeanRegistrationCode.class));

        RuntimeHints hints = generationContext.getRuntimeHints();
        Method handler = Listener.class.getDeclaredMethod("onMessage", String.class);
        assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(handler))
                .accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection()
                        .onMethodInvocation(Listener.class.getDeclaredMethod("helper", List.class)))
                .rejects(hints);
    }

    static class Listener {

        @IdempotentHandler(key = "#root")
        void onMessage(String message) {}

        void helper(List<String> values) {}
    }
}
