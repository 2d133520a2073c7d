data "aws_region" "current" {}
