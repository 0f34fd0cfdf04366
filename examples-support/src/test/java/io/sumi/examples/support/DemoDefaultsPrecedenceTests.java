package io.sumi.examples.support;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.Banner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

/**
 * The one precedence rule of the demos' defaults, in an environment Spring Boot prepared: they
 * override the packaged {@code application.properties} and lose to what a user sets.
 */
class DemoDefaultsPrecedenceTests {

    private static final Map<String, Object> DEFAULTS = Map.of(
            "demo-test.packaged", "demo default",
            "demo-test.user", "demo default",
            "demo-test.unset", "demo default");

    @Configuration(proxyBeanMethods = false)
    static class Empty {}

    @Test
    void demoDefaultsOverridePackagedConfigurationButNotTheCommandLine() {
        try (ConfigurableApplicationContext context = run("--demo-test.user=command line")) {
            ConfigurableEnvironment environment = context.getEnvironment();
            assertThat(environment.getProperty("demo-test.packaged")).isEqualTo("demo default");
            assertThat(environment.getProperty("demo-test.user")).isEqualTo("command line");
            assertThat(environment.getProperty("demo-test.unset")).isEqualTo("demo default");
        }
    }

    @Test
    void demoDefaultsLoseToSystemProperties() {
        System.setProperty("demo-test.user", "system property");
        try (ConfigurableApplicationContext context = run()) {
            assertThat(context.getEnvironment().getProperty("demo-test.user")).isEqualTo("system property");
            assertThat(context.getEnvironment().getProperty("demo-test.packaged"))
                    .isEqualTo("demo default");
        } finally {
            System.clearProperty("demo-test.user");
        }
    }

    @Test
    void withoutPackagedConfigurationDemoDefaultsComeLast() {
        org.springframework.core.env.MutablePropertySources sources =
                new org.springframework.core.env.MutablePropertySources();
        sources.addLast(new MapPropertySource("commandLineArgs", Map.of("demo-test.user", "command line")));
        DemoModeInitializer.addDemoDefaults(
                sources, new MapPropertySource(DemoModeInitializer.DEMO_DEFAULTS_SOURCE, DEFAULTS));

        assertThat(sources.stream().map(source -> source.getName()))
                .containsExactly("commandLineArgs", DemoModeInitializer.DEMO_DEFAULTS_SOURCE);
    }

    private static ConfigurableApplicationContext run(String... args) {
        SpringApplication application = new SpringApplication(Empty.class);
        application.setWebApplicationType(WebApplicationType.NONE);
        application.setBannerMode(Banner.Mode.OFF);
        application.addInitializers(context -> DemoModeInitializer.addDemoDefaults(
                context.getEnvironment().getPropertySources(),
                new MapPropertySource(DemoModeInitializer.DEMO_DEFAULTS_SOURCE, DEFAULTS)));
        return application.run(args);
    }
}
