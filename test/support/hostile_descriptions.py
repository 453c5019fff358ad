"""Robot descriptions that try to run code or leak a file through xacro (issue 43)."""

SECRET = "s3cr3t-token-7f2a"      # what a test puts where only a leak could show it
XACRO_NS = 'xmlns:xacro="http://www.ros.org/wiki/xacro"'


def sandbox_escape(marker):
    """A description whose link name leaves xacro's expression sandbox (it checks only the
    names at the top of an expression): it reaches Popen through object's subclasses and
    creates the file ``marker``."""
    escape = ("(lambda: [c for c in ().__class__.__base__.__subclasses__() "
              f"if c.__name__ == 'Popen'][0](['touch', '{marker}']).wait())()")
    return f'<robot name="r"><link name="${{{escape}}}"/></robot>'


def secret_in_an_error(path):
    """A xacro that reads file ``path`` (xacro.load_yaml) and puts it in its error message."""
    return (f'<robot name="r" {XACRO_NS}><xacro:property name="s" '
            f'value="${{xacro.load_yaml(\'{path}\')}}"/>'
            '<xacro:if value="${xacro.fatal(str(s))}"/><link name="a"/></robot>')
